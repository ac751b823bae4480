"""Ports: the protocols the domain needs the outside world to implement."""
