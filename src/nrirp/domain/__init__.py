"""Pure domain: topology, CPU sets, cache, pipeline, policies and the ports they need.

Nothing here performs I/O or imports transport, asyncio, protobuf or wiring code.
"""
