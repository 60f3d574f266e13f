//! Label selectors (the full string syntax, which kube-core cannot parse) and field selectors.
