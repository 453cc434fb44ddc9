"""Independent references the tests check the models against (closed forms, ODE solutions of
the same physics, Pinocchio); production code does not import them."""
