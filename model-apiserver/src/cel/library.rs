//! Kubernetes' CEL libraries (`k8s.io/apiserver/pkg/cel/library`) on cel-rust: the glue every
//! library module shares.
//!
//! # How a Kubernetes value is represented
//!
//! A Quantity, a URL, an IP, a CIDR, a Semver and a Format are [`Value::Opaque`]s: a Rust type
//! implementing cel's [`Opaque`] trait, whose CEL type is `Type::new_opaque_type(<upstream's type
//! name>)` (`kubernetes.Quantity`, `net.IP`, ...). The overloads are declared on the
//! [`Env`](cel::Env) for that type, so `isLessThan` picks the Quantity or the Semver overload by
//! its receiver, as cel-go does. This is the representation cel 0.15 offers for application
//! values that must stay values:
//! - equality is the Rust type's `Eq` (cel compares the type names first, so a quantity never
//!   equals a string or a URL), which each type defines as upstream's `Equal` does
//!   (`quantity('1k') == quantity('1000')`);
//! - unlike a value of an application's own `Val` type, an opaque value converts to
//!   [`Value`]: it survives `Program::execute`, so a ValidatingAdmissionPolicy variable may hold
//!   one (`variables.limit.isLessThan(...)`);
//! - a map with a hidden marker key would have answered `has()`, `size()` and `==` as a map.
//!
//! # Errors
//!
//! A function that fails returns [`ExecutionError::FunctionError`] with upstream's message; the
//! rule's cause prints the message alone ([`super::error_text`]), as cel-go prints a `types.Err`.

use std::sync::Arc;

use cel::common::types::{CelBool, CelDouble, CelInt, CelList, CelOptional, CelString, Type};
use cel::common::value::{CowVal, Val};
use cel::objects::Opaque;
use cel::{ExecutionError, Value};

pub(super) use cel::DeclarationError;

/// A Kubernetes value held as an opaque CEL value (see the module docs).
pub(super) trait KubeValue: Opaque + Clone {
    /// Upstream's CEL type name, e.g. `kubernetes.Quantity`.
    const TYPE_NAME: &'static str;

    /// The CEL type of the values, for declaring overloads.
    fn cel_type() -> Type {
        Type::new_opaque_type(Self::TYPE_NAME)
    }
}

/// An overload's argument, converted from the CEL value it was called with.
pub(super) trait Arg: Sized {
    fn from_val(val: &dyn Val) -> Result<Self, ExecutionError>;
}

/// An overload's result, converted to a CEL value.
pub(super) trait IntoCel {
    fn into_cel<'b, 'v>(self) -> Result<CowVal<'b, 'v>, ExecutionError>;
}

fn unexpected(val: &dyn Val, want: &str) -> ExecutionError {
    ExecutionError::UnexpectedType { got: val.get_type().name().to_owned(), want: want.to_owned() }
}

impl Arg for String {
    fn from_val(val: &dyn Val) -> Result<Self, ExecutionError> {
        val.downcast_ref::<CelString>().map(|s| s.inner().to_owned()).ok_or_else(|| unexpected(val, "string"))
    }
}

impl Arg for i64 {
    fn from_val(val: &dyn Val) -> Result<Self, ExecutionError> {
        val.downcast_ref::<CelInt>().map(|i| *i.inner()).ok_or_else(|| unexpected(val, "int"))
    }
}

impl Arg for bool {
    fn from_val(val: &dyn Val) -> Result<Self, ExecutionError> {
        val.downcast_ref::<CelBool>().map(|b| *b.inner()).ok_or_else(|| unexpected(val, "bool"))
    }
}

/// Any value, as the crate's owned [`Value`] (what the list functions compare).
impl Arg for Value {
    fn from_val(val: &dyn Val) -> Result<Self, ExecutionError> {
        Value::try_from(val)
    }
}

impl<T: KubeValue> Arg for T {
    fn from_val(val: &dyn Val) -> Result<Self, ExecutionError> {
        match Value::try_from(val) {
            Ok(Value::Opaque(opaque)) => {
                opaque.downcast_ref::<T>().cloned().ok_or_else(|| unexpected(val, T::TYPE_NAME))
            }
            _ => Err(unexpected(val, T::TYPE_NAME)),
        }
    }
}

impl IntoCel for bool {
    fn into_cel<'b, 'v>(self) -> Result<CowVal<'b, 'v>, ExecutionError> {
        Ok(CowVal::owned(CelBool::from(self)))
    }
}

impl IntoCel for i64 {
    fn into_cel<'b, 'v>(self) -> Result<CowVal<'b, 'v>, ExecutionError> {
        Ok(CowVal::owned(CelInt::from(self)))
    }
}

impl IntoCel for f64 {
    fn into_cel<'b, 'v>(self) -> Result<CowVal<'b, 'v>, ExecutionError> {
        Ok(CowVal::owned(CelDouble::from(self)))
    }
}

impl IntoCel for Value {
    fn into_cel<'b, 'v>(self) -> Result<CowVal<'b, 'v>, ExecutionError> {
        let boxed: Box<dyn Val> = self.try_into()?;
        Ok(CowVal::Owned(boxed))
    }
}

impl IntoCel for String {
    fn into_cel<'b, 'v>(self) -> Result<CowVal<'b, 'v>, ExecutionError> {
        Ok(CowVal::owned(CelString::from(self)))
    }
}

impl IntoCel for Vec<String> {
    fn into_cel<'b, 'v>(self) -> Result<CowVal<'b, 'v>, ExecutionError> {
        Ok(CowVal::owned(string_list(self)))
    }
}

/// `optional.none()` or `optional.of(value)`.
impl<T: IntoCel> IntoCel for Option<T> {
    fn into_cel<'b, 'v>(self) -> Result<CowVal<'b, 'v>, ExecutionError> {
        match self {
            None => Ok(CowVal::owned(CelOptional::none())),
            Some(value) => Ok(CowVal::owned(CelOptional::of(value.into_cel()?.into_owned()))),
        }
    }
}

impl<T: KubeValue> IntoCel for T {
    fn into_cel<'b, 'v>(self) -> Result<CowVal<'b, 'v>, ExecutionError> {
        let boxed: Box<dyn Val> = Value::Opaque(Arc::new(self)).try_into()?;
        Ok(CowVal::Owned(boxed))
    }
}

/// A CEL `list(string)`.
pub(super) fn string_list(items: Vec<String>) -> CelList<'static> {
    let items: Vec<Box<dyn Val>> =
        items.into_iter().map(|s| Box::new(CelString::from(s)) as Box<dyn Val>).collect();
    CelList::from(items)
}

/// The error a library function fails with: upstream's message, printed alone in a cause.
pub(super) fn error(function: &str, message: impl ToString) -> ExecutionError {
    ExecutionError::function_error(function, message)
}

/// Declares an overload function, `fn name(args: Vec<CowVal>) -> Result<CowVal>` as
/// [`cel::common::functions::Function`] wants it, from typed arguments ([`Arg`]) and a body
/// returning `Result<impl IntoCel, ExecutionError>`.
macro_rules! overload {
    ($(#[$doc:meta])* fn $name:ident($($arg:ident: $ty:ty),* $(,)?) -> $ret:ty $body:block) => {
        $(#[$doc])*
        fn $name<'b, 'v>(
            args: Vec<cel::common::value::CowVal<'b, 'v>>,
        ) -> Result<cel::common::value::CowVal<'b, 'v>, cel::ExecutionError> {
            fn body($($arg: $ty),*) -> Result<$ret, cel::ExecutionError> $body
            const NAMES: &[&str] = &[$(stringify!($arg)),*];
            const ARITY: usize = NAMES.len();
            if args.len() != ARITY {
                return Err(cel::ExecutionError::invalid_argument_count(ARITY, args.len()));
            }
            let mut _args = args.iter();
            $(
                let $arg = <$ty as $crate::cel::library::Arg>::from_val(
                    _args.next().expect("arity checked").as_ref(),
                )?;
            )*
            $crate::cel::library::IntoCel::into_cel(body($($arg),*)?)
        }
    };
}
pub(super) use overload;

pub(super) use crate::errors::go_quote;
