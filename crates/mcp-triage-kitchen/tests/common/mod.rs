//! The kitchen's integration tests use the raw-HTTP helpers of `mcp_triage_kitchen::testing`
//! (feature `testing`, enabled by the kitchen's dev-dependency on itself), shared with the
//! proxy's tests.

pub use mcp_triage_kitchen::testing::*;
