//! The `sleuth` binary: parse arguments, load configuration, install logging, run the command.

use clap::Parser;

/// The embedding model allocates large short-lived tensors; glibc's malloc serves those with fresh mmaps and page
/// faults (a third of ingestion time went to the kernel), mimalloc reuses them.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    let cli = sleuth_actors::cli::Cli::parse();
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return std::process::ExitCode::FAILURE;
        }
    };
    match runtime.block_on(sleuth_actors::cli::run(cli)) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e:#}");
            std::process::ExitCode::FAILURE
        }
    }
}
