"""`ascendtune agent`: the node service that keeps every worker of this host on its plan
(`bind --workers --watch`'s engine, app.keep_bound), samples where the workers run (`watch`'s
engine, core.watch) and what the host checks say (`doctor`), and serves it all as Prometheus
metrics; plus the forms it is installed in (a systemd unit, a Kubernetes DaemonSet)."""
