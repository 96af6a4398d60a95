//! MCP over stdio: one session of one world, a JSON-RPC message per line, for desktop agents.

use std::io::{BufRead, Read, Write};

use super::run::ResetOptions;
use super::sessions::{Opener, Sessions};
use super::{MAX_BODY, ServeError, ServeOptions, Worlds};

/// Serves world `world` (an id, as `perennial serve` serves it) with run seed `seed` to one
/// MCP client on stdin and stdout until stdin ends: one JSON-RPC message per line in, one
/// answer per request out. Nothing else is written to stdout.
///
/// # Errors
///
/// A `--worlds` file cannot be served, the world id is not served, or stdout fails.
pub fn serve_stdio(world: &str, seed: u64, options: &ServeOptions) -> Result<(), ServeError> {
    let worlds = Worlds::load(&options.worlds)?;
    let sessions = Sessions::new(
        worlds,
        1,
        options.max_snapshots,
        options.idle_timeout,
        options.runs.clone(),
    );
    if sessions.worlds.get(world).is_ok_and(|w| w.roles.is_some()) {
        return Err(ServeError::Option(format!(
            "--stdio {world}: a world with roles needs one session per role, and stdio serves one; serve it over HTTP (`perennial serve --worlds FILE`), where each role's session joins the first"
        )));
    }
    let (sid, seat) = sessions
        .open(Opener::Mcp)
        .map_err(|e| ServeError::Option(e.to_string()))?;
    let reset = ResetOptions {
        world: Some(world.to_string()),
        seed: Some(seed),
        ..ResetOptions::default()
    };
    let run = sessions.build(&sid, &reset).map_err(ServeError::Option)?;
    *seat.run() = Some(run);
    let stdin = std::io::stdin();
    let mut out = std::io::stdout().lock();
    let mut line = String::new();
    let mut input = stdin.lock();
    loop {
        line.clear();
        // A line longer than the limit is read only up to it, then skipped to its end.
        let read = (&mut input)
            .take(MAX_BODY as u64 + 1)
            .read_line(&mut line)
            .map_err(ServeError::Io)?;
        if read == 0 {
            return Ok(());
        }
        let answer = if line.len() > MAX_BODY && !line.ends_with('\n') {
            let mut rest = Vec::new();
            input.read_until(b'\n', &mut rest).map_err(ServeError::Io)?;
            Some(format!(
                r#"{{"jsonrpc":"2.0","id":null,"error":{{"code":-32600,"message":"the message is longer than {MAX_BODY} bytes"}}}}"#
            ))
        } else if line.trim().is_empty() {
            None
        } else {
            super::mcp::answer_line(&seat, &sid, line.trim_end())
        };
        if let Some(answer) = answer {
            out.write_all(answer.as_bytes())
                .and_then(|()| out.write_all(b"\n"))
                .and_then(|()| out.flush())
                .map_err(ServeError::Io)?;
        }
    }
}
