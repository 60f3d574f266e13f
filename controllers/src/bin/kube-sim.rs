//! The `kube-sim` command line: `sim::cli`'s subcommands (list, explore, replay, shrink, explain,
//! merge) over the zoo's scenarios, plus `serve`.

use std::{net::SocketAddr, path::PathBuf, process::ExitCode};

use clap::{Parser, Subcommand};

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
    Sim(sim::cli::Command),
    /// Serve the Kubernetes API of an empty model cluster over HTTP (live, not simulated), for
    /// kubectl, kube-rs or any other client.
    Serve(ServeArgs),
}

#[derive(clap::Args)]
struct ServeArgs {
    /// Address to listen on. Loopback by default: the model has no authentication.
    #[arg(long, default_value = "127.0.0.1:8001")]
    addr: SocketAddr,
    /// A CRD YAML file, or a directory of them, to create at start.
    #[arg(long)]
    crds: Option<PathBuf>,
    /// Seed of uids and generated names (default: from the clock).
    #[arg(long)]
    seed: Option<u64>,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Sim(command) => sim::cli::dispatch(command, registry),
        Command::Serve(args) => serve(args),
    }
}

/// Every scenario this binary knows: the operator zoo's fixed and buggy variants. Built only for
/// the subcommands that need it (each zoo scenario runs its fault-free reference first).
fn registry() -> sim::scenario::Registry {
    sim::scenario::Registry::new(controllers::zoo::scenarios()).expect("zoo scenario names are unique")
}

fn serve(args: ServeArgs) -> ExitCode {
    let config = controllers::serve::ServeConfig { addr: args.addr, crds: args.crds, seed: args.seed };
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("kube-sim serve: cannot start the tokio runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let served = runtime.block_on(controllers::serve::run(config, |addr| {
        println!("kube-sim serve: the model API server is listening on http://{addr}");
        println!("  kubectl --server http://{addr} get namespaces");
    }));
    match served {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("kube-sim serve: {e}");
            ExitCode::FAILURE
        }
    }
}
