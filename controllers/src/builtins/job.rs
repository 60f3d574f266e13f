//! (being written)

use sim::SimBuilder;

/// Add the controller to a world.
pub fn job_controller(builder: SimBuilder) -> SimBuilder {
    builder
}
