"""NRI v0.1: the exec-plugin protocol of containerd 1.5/1.6 (docs/nri-v01.md).

``protocol`` (requests, results) and ``conf`` (the plugin's conf.json entry) import only the
standard library: the exec client loads them on every container start. ``translate`` turns
a request into the domain's pods and containers, ``enforce`` writes decisions into cgroups,
``stale`` finds what disappeared without a delete, and ``handler`` puts them together over a
``ResourceManager``. This package imports nothing itself.
"""
