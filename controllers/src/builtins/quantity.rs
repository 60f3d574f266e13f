//! Resource quantities (`10Gi`, `500M`, `1.5e9`) as numbers, to compare a volume's capacity with
//! a claim's request as apimachinery's `Quantity.Cmp` does: the model's parser
//! ([`model_apiserver::quantity`]), which its validation compares with too.

use k8s_openapi::apimachinery::pkg::api::resource::Quantity;

/// The value of a quantity (`1Gi` is 1073741824.0), `None` if it does not parse. Exponents
/// (`1e3`, `1E3`) parse as numbers; a bare trailing `E` is the exa suffix.
pub fn value(quantity: &Quantity) -> Option<f64> {
    model_apiserver::quantity::value(quantity.0.trim())
}
