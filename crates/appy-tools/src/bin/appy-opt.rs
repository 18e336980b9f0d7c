//! `appy-opt`: print and transform appy's IR levels (see `appy_tools::opt`).

#![allow(clippy::result_large_err)]

use std::io::{Read, Write};
use std::process::ExitCode;

fn main() -> ExitCode {
    appy_tools::fault::install();
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::new(appy_ir::config::log().unwrap_or_default()))
        // `APPY_LOG=debug` also reports how long each pass and pipeline took.
        .with_span_events(tracing_subscriber::fmt::format::FmtSpan::CLOSE)
        .with_writer(std::io::stderr)
        .init();
    let argv: Vec<String> = std::env::args().collect();
    let mut stdin = String::new();
    // The input `-` is standard input (`-o -`, the output, is standard output).
    if argv.iter().enumerate().skip(1).any(|(k, a)| a == "-" && argv[k - 1] != "-o") {
        let _ = std::io::stdin().read_to_string(&mut stdin);
    }
    match appy_tools::opt::run(&argv, &stdin) {
        Ok(out) => {
            let _ = std::io::stdout().write_all(out.as_bytes());
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprint!("{e}");
            if !e.ends_with('\n') {
                eprintln!();
            }
            ExitCode::FAILURE
        }
    }
}
