//! (being written)

use sim::SimBuilder;

/// Add the controller to a world.
pub fn deployment_controller(builder: SimBuilder) -> SimBuilder {
    builder
}
