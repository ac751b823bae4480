"""The engine API: the resource-manager engine served over gRPC on a unix socket.

``service`` and ``server`` serve a ``ResourceManager`` (messages from ``gen``, translated in
``translate``); ``client`` is the Python client. ``protowire``, ``hpack`` and ``h2call`` are a
tiny hand-written gRPC client for one unary call, for the NRI v0.1 exec plugin whose start-up
cannot afford importing grpcio or protobuf (docs/nri-v01.md). This package imports nothing
itself, so that those modules stay light.
"""
