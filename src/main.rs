//! The `perennial` command line; everything lives in [`perennial::cli`].

fn main() -> std::process::ExitCode {
    perennial::cli::main()
}
