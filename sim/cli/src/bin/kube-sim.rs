//! The `kube-sim` command line: `kube_sim`'s subcommands (list, explore, replay, shrink, explain,
//! merge) over the zoo's scenarios, plus `serve`.

use std::{net::SocketAddr, path::PathBuf, process::ExitCode};

use clap::{Parser, Subcommand};

// The allocator of every binary that runs seeds (see the workspace Cargo.toml's `mimalloc`).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Deterministic simulation testing for Kubernetes controllers.
#[derive(Parser)]
#[command(name = "kube-sim", version)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    #[command(flatten)]
    Sim(kube_sim::Command),
    /// Serve the Kubernetes API of a fresh model cluster over HTTP (live, not simulated), for
    /// kubectl, kube-rs or any other client; or, with --replay, a failing run's cluster at one step,
    /// read only.
    Serve(ServeArgs),
}

#[derive(clap::Args)]
struct ServeArgs {
    /// Address to listen on. Loopback by default: the model has no authentication (another
    /// address is served with a warning).
    #[arg(long, default_value = "127.0.0.1:8001")]
    addr: SocketAddr,
    /// Comma-separated regular expressions; only requests whose Host (without port), and Origin
    /// if any, match one are served, others get 403 (as `kubectl proxy --accept-hosts`).
    #[arg(long, value_name = "REGEX", default_value = model_apiserver_http::guard::ACCEPT_HOSTS_DEFAULT)]
    accept_hosts: String,
    /// A CRD YAML file, or a directory of them, to create at start.
    #[arg(long)]
    crds: Option<PathBuf>,
    /// Seed of uids and generated names (default: from the clock).
    #[arg(long)]
    seed: Option<u64>,
    /// Run the cluster's clock N times as fast as the wall clock: what the server stamps and
    /// what the built-in controllers time (grace periods, deadlines, CronJob schedules). 60 makes
    /// a minute pass in a second.
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=3600))]
    time_scale: u32,
    /// Run the built-in controllers live (garbage collector, namespace, Deployment, ReplicaSet,
    /// StatefulSet, DaemonSet, Job, CronJob, disruption, TTL-after-finished, ServiceAccount, root
    /// CA publisher, endpoints, EndpointSlice, PersistentVolume binder, local provisioner,
    /// ephemeral volume, PVC and PV protection, Pod GC, kubelet-lite): the kubelet-lite registers
    /// the Node `node-1` (cordon, drain and uncordon work), applied Deployments get Pods that
    /// become Running, PodDisruptionBudgets a status, Services their Endpoints and
    /// EndpointSlices, claims a bound volume of the default StorageClass `standard` (and a deleted
    /// claim stays while a Pod mounts it), and every namespace its `default` ServiceAccount and
    /// `kube-root-ca.crt` ConfigMap.
    #[arg(long)]
    with_builtins: bool,
    /// Serve, read only, the cluster state of a regression file's run at step `--at` (a step is
    /// a successful write), instead of an empty model.
    #[arg(long, value_name = "FILE", requires = "at", conflicts_with_all = ["crds", "with_builtins"])]
    replay: Option<PathBuf>,
    /// The step of `--replay` to serve: 1 is the state after the run's first write.
    #[arg(long, value_name = "STEP", requires = "replay", value_parser = clap::value_parser!(u64).range(1..))]
    at: Option<u64>,
    /// The cluster of `--replay` to serve (default: `default`, or the scenario's only cluster).
    #[arg(long, value_name = "NAME", requires = "replay")]
    cluster: Option<String>,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Sim(command) => kube_sim::dispatch(command, registry),
        Command::Serve(args) => serve(args),
    }
}

/// Every scenario this binary knows: the operator zoo's fixed and buggy variants. Built only for
/// the subcommands that need it (each zoo scenario runs its fault-free reference first).
fn registry() -> sim::scenario::Registry {
    sim::scenario::Registry::new(controllers::zoo::scenarios()).expect("zoo scenario names are unique")
}

fn serve(args: ServeArgs) -> ExitCode {
    let accept_hosts = match model_apiserver_http::guard::AcceptHosts::parse(&args.accept_hosts) {
        Ok(hosts) => hosts,
        Err(e) => {
            eprintln!("kube-sim serve: --accept-hosts {:?}: {e}", args.accept_hosts);
            return ExitCode::from(kube_sim::EXIT_USAGE);
        }
    };
    if !args.addr.ip().is_loopback() {
        eprintln!(
            "kube-sim serve: warning: {} is not a loopback address: the model has no authentication, so anyone who can reach it can read and write every object (requests are still refused unless their Host matches --accept-hosts {:?})",
            args.addr, args.accept_hosts
        );
    }
    let config = kube_sim::serve::ServeConfig {
        addr: args.addr,
        crds: args.crds,
        seed: args.seed,
        time_scale: args.time_scale,
        accept_hosts,
        ..kube_sim::serve::ServeConfig::default()
    };
    if let (Some(file), Some(at)) = (args.replay.clone(), args.at) {
        return serve_replay(
            kube_sim::serve::replay::ReplayConfig { file, at, cluster: args.cluster },
            &config,
        );
    }
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("kube-sim serve: cannot start the tokio runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let served = runtime.block_on(kube_sim::serve::run(config, args.with_builtins, |addr| {
        println!("kube-sim serve: the model API server is listening on http://{addr}");
        println!("  kubectl --server http://{addr} get namespaces");
    }));
    match served {
        Ok(()) => ExitCode::SUCCESS,
        // Bad input (a CRD file that is unreadable, empty or invalid) is exit 2, as everywhere in
        // the CLI; a failure to listen is 1.
        Err(e @ (kube_sim::serve::ServeError::Crds(_) | kube_sim::serve::ServeError::CrdRejected { .. })) => {
            eprintln!("kube-sim serve: {e}");
            ExitCode::from(kube_sim::EXIT_USAGE)
        }
        Err(e) => {
            eprintln!("kube-sim serve: {e}");
            ExitCode::FAILURE
        }
    }
}

/// `serve --replay FILE --at STEP`: rerun the file under madsim (before any tokio runtime
/// exists), then serve the captured state read only. A file that cannot be replayed, or a step
/// past the run's end, exits 2.
fn serve_replay(
    config: kube_sim::serve::replay::ReplayConfig,
    serve: &kube_sim::serve::ServeConfig,
) -> ExitCode {
    let captured = match kube_sim::serve::replay::capture(&config, &registry()) {
        Ok(captured) => captured,
        Err(e) => {
            eprintln!("kube-sim serve: {e}");
            return ExitCode::from(2);
        }
    };
    println!("kube-sim serve: {}", captured.summary());
    let live = captured.into_live();
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("kube-sim serve: cannot start the tokio runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let served = runtime.block_on(model_apiserver_http::run_live(live, serve, |addr| {
        println!("kube-sim serve: the replayed state is served read only on http://{addr}");
        println!("  kubectl --server http://{addr} get all -A");
    }));
    match served {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("kube-sim serve: {e}");
            ExitCode::FAILURE
        }
    }
}
