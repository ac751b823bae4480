# grpcio-tools ships no types; the package itself is only used for its location (__file__).
