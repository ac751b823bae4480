"""Generated protobuf modules (do not edit; run tools/gen_proto.py)."""
