//! The `kube-sim` command line. Each subcommand is its own function; `serve` is the first.

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
        Command::Serve(args) => serve(args),
    }
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
