//! Invariants and oracles for kube-sim runs. Filled by the properties issue.
