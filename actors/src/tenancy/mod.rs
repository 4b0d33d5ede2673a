//! Who may start a request, decided before anything of it is stored: a tenant's limits (`quota.rs`: requests
//! under way, rate and LLM tokens per day, counted across every intake replica in the `sleuth_quotas` bucket), and
//! the deployment's capacity (`admission.rs`: a request that could not start within its time budget, at the
//! planners' recent pace, is refused as overloaded). Intake asks both; a refusal is a retryable error.

pub mod admission;
pub mod quota;
