//! Shared helpers of the test harnesses.
