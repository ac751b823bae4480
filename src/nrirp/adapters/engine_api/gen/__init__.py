"""Generated protobuf modules of the engine API (do not edit; run tools/gen_proto.py)."""
