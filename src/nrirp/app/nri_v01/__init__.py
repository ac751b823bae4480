"""``nrirp-nri-v01``: the NRI v0.1 exec plugin (docs/nri-v01.md).

``cli`` is the thin client the runtime runs for every container task; it imports only the
standard library and the light modules of ``nrirp.adapters.nri_v01`` and
``nrirp.adapters.engine_api``. ``standalone`` decides in-process when no daemon answers.
"""
