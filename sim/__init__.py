"""collsim's simulator: SimPy model of ranks and links running collective algorithms."""
