//! `perennial serve`: the enterprise world's tools for OpenEnv and MCP clients.

use std::time::Duration;

use super::Failure;
use crate::serve::{ServeError, ServeOptions};

/// `perennial serve [--host 127.0.0.1] [--port 8000] [--max-sessions 256] [--idle-timeout S] [--worlds FILE...] [--runs DIR]`
#[derive(Clone, Debug, clap::Args)]
pub struct ServeArgs {
    /// The address to listen on; anything but loopback exposes the server to the network.
    #[arg(long, default_value = "127.0.0.1")]
    pub host: String,
    /// The port; 0 picks a free one (the address is printed at start).
    #[arg(long, default_value_t = 8000)]
    pub port: u16,
    /// Sessions open at once; one more is refused with CAPACITY_REACHED.
    #[arg(long, default_value_t = 256)]
    pub max_sessions: usize,
    /// Seconds after which an unused session is closed.
    #[arg(long, value_name = "S", default_value_t = 600)]
    pub idle_timeout: u64,
    /// Snapshots kept (POST /snapshots); a new one beyond them drops the oldest.
    #[arg(long, default_value_t = 1024)]
    pub max_snapshots: usize,
    /// Enterprise world files to serve besides `warehouse` and `logistics`: FILE (served
    /// under its file stem) or ID=FILE. Clients name worlds by id, never by path.
    #[arg(long, value_name = "FILE", num_args = 1..)]
    pub worlds: Vec<String>,
    /// A directory where each session's run writes its trace (`<world>-<session>-<n>.jsonl`).
    #[arg(long, value_name = "DIR")]
    pub runs: Option<std::path::PathBuf>,
    /// Serve MCP over stdin and stdout instead: one session of world WORLD (an id), for
    /// desktop agents; no port is bound.
    #[arg(long, value_name = "WORLD")]
    pub stdio: Option<String>,
    /// With --stdio: the run seed.
    #[arg(long, requires = "stdio", default_value_t = 0)]
    pub seed: u64,
}

pub(super) fn run(args: &ServeArgs) -> Result<(), Failure> {
    let options = ServeOptions {
        host: args.host.clone(),
        port: args.port,
        max_sessions: args.max_sessions,
        max_snapshots: args.max_snapshots,
        idle_timeout: Duration::from_secs(args.idle_timeout),
        worlds: args.worlds.clone(),
        runs: args.runs.clone(),
    };
    let served = match &args.stdio {
        Some(world) => crate::serve::serve_stdio(world, args.seed, &options),
        None => crate::serve::serve(&options),
    };
    served.map_err(|e| match e {
        ServeError::World { .. } | ServeError::Option(_) => Failure::input(e),
        _ => Failure::run(e),
    })
}
