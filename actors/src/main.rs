//! The `sleuth` binary: parse arguments, load configuration, install logging, run the command.

use clap::Parser;

/// The embedding model allocates large short-lived tensors; glibc's malloc serves those with fresh mmaps and page
/// faults (a third of ingestion time went to the kernel), mimalloc reuses them.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// `mi_option_arena_eager_commit`: the option's place in `mi_option_t`, the same in mimalloc v2 and v3 (the crate
/// names no constant for it).
const ARENA_EAGER_COMMIT: libmimalloc_sys::mi_option_t = 4;

/// On Linux mimalloc commits a whole arena when it reserves one; committing pages as they are used instead takes the
/// peak RSS of a 2Wiki evaluation from 342–347 MB to 290–291 MB at the same latency (BENCHMARKS "Memory"). Set before
/// `main`, because the first allocation reserves the arena that holds nearly everything: after mimalloc's own
/// constructor has read the environment, so a `MIMALLOC_ARENA_EAGER_COMMIT` that is set still decides.
#[ctor::ctor(unsafe)]
fn commit_arena_pages_on_use() {
    // SAFETY: writes one integer option of the allocator; no Rust allocation or std service is used.
    unsafe { libmimalloc_sys::mi_option_set_default(ARENA_EAGER_COMMIT, 0) }
}

fn main() -> std::process::ExitCode {
    let cli = sleuth_actors::cli::Cli::parse();
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return std::process::ExitCode::FAILURE;
        }
    };
    // The command runs as a task on the runtime's workers, not on this thread: what it waits on (a request's
    // events, say) is then woken on the thread that published it, without waking this one through the kernel at
    // every hop (a cross-thread wake per event cost the embedded null bench a third of its time in the kernel).
    match runtime.block_on(async { tokio::spawn(sleuth_actors::cli::run(cli)).await }) {
        Ok(Ok(code)) => code,
        Ok(Err(e)) => {
            eprintln!("error: {e:#}");
            std::process::ExitCode::FAILURE
        }
        Err(e) => {
            eprintln!("error: the command stopped: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}
