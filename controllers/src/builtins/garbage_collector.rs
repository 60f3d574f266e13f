//! (being written)

use sim::SimBuilder;

/// How often the graph is rebuilt.
pub const SCAN_INTERVAL: std::time::Duration = std::time::Duration::from_millis(100);

/// Add the controller to a world.
pub fn garbage_collector(builder: SimBuilder) -> SimBuilder {
    builder
}
