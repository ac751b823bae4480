"""End-to-end tests against a real containerd with NRI (marked ``e2e``)."""
