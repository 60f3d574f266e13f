//! Built-in controllers, example operators and scenarios for kube-sim.
