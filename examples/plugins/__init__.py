"""Example NRI plugins built on the stub, runnable with ``python -m``.

- :mod:`~nrirp.adapters.nri.examples.logger`: logs one line per event; subscribes to everything.
- :mod:`~nrirp.adapters.nri.examples.pin_cpus`: pins containers' cpusets from pod annotations and
  re-pins running containers on SIGUSR1 from a JSON control file.

Both run as external plugins (``--socket PATH``) or pre-launched by the runtime (an ``NN-name``
executable in its plugin directory that execs ``python -m ...``; the socket is fd 3). See
``docs/nri-plugins.md``.
"""
