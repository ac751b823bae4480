"""NRI adapter: ttRPC transport, plugin stub, simulated runtime, translation to the domain."""
