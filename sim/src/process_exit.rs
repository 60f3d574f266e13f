//! `std::process::exit` inside a simulated run ends that seed, not the process.
//!
//! A controller that calls `std::process::exit(1)` (the canonical sample does on a failed startup
//! check) would otherwise end the whole `explore` or `cargo test` process with no output and no
//! regression file. Inside a run, the call instead unwinds the calling task with a
//! [`ProcessExit`] payload, which the engine turns into [`Verdict::Exit`](crate::Verdict::Exit)
//! naming the node and the code; the sweep goes on, and the seed replays.
//!
//! How: this module defines the C symbol `exit` (as madsim defines `clock_gettime` and
//! `getrandom`), so the executable's calls to libc's `exit` reach it. Outside a run it calls
//! libc's own `exit` (found with `dlsym(RTLD_NEXT)`), so a test binary's, the CLI's or a library's
//! exit code is unchanged. Inside a run it unwinds (the function is `C-unwind`).
//!
//! One thing stands in the way, and is undone here: on Linux, Rust's `std::process::exit` first
//! records the exiting thread in a private static of std (`unique_thread_exit`, since glibc's
//! `exit` is not thread-safe) and never clears it, because it never expects to return. Left set,
//! the next `std::process::exit` of any thread would wait forever (or abort, on a thread that
//! reuses the first one's thread-local block). The static is found once, by name, in the running
//! executable's symbol table (`/proc/self/exe`, read with the `object` crate), and cleared after
//! checking that it holds exactly this thread's marker (the address of its `errno`), so nothing
//! else is ever written. When it cannot be found (a stripped executable, another std) the call is
//! not intercepted: a line on stderr names the node, the code and why, and the process exits with
//! the controller's code as it would have anyway.
//!
//! Two threads may exit at once (two workers' seeds): std's guard then makes the second wait in
//! `pause()` forever, with its exit code out of reach. This module defines `pause` too: on a
//! thread in a run it unwinds with [`ExitCollision`], and the engine runs that seed again from
//! the start (it is deterministic, so the rerun is the same run; only the real-time coincidence
//! differs). The window is a few instructions: std's guard is set just before libc's `exit` is
//! called, and cleared first thing there, the symbol table having been read when the first run
//! started.
//!
//! Not intercepted: `std::process::abort`, signals, and anything outside Linux.

use std::ffi::c_int;

/// The payload a simulated `std::process::exit` unwinds with: the code and the node that called it.
#[derive(Debug)]
pub struct ProcessExit {
    /// The node (controller, `workload`) whose task called `exit`.
    pub node: String,
    /// The exit code it passed.
    pub code: i32,
}

/// The payload a simulated `exit` unwinds with when another thread was exiting at the same
/// instant: the seed is run again (see the module docs).
#[derive(Debug)]
pub struct ExitCollision;

/// Read the executable's symbol table now, so that the first simulated `exit` does not (a
/// long window in which a second exiting thread would collide). Called when a run starts.
pub(crate) fn prepare() {
    #[cfg(all(madsim, target_os = "linux"))]
    std_exit_guard::prepare();
}

/// The verdict for a task that unwound with `payload`: [`Verdict::Exit`](crate::Verdict::Exit) for
/// a simulated `exit`, otherwise a [`Verdict::Crash`](crate::Verdict::Crash) of `node` (reconciling
/// `object`, if known) with the panic's message.
pub(crate) fn verdict_for_unwind(
    payload: &(dyn std::any::Any + Send),
    node: &str,
    object: Option<String>,
) -> crate::Verdict {
    if payload.is::<ExitCollision>() {
        // Not a verdict: the run starts again (`SimBuilder::run_simulated` catches it).
        std::panic::resume_unwind(Box::new(ExitCollision));
    }
    match payload.downcast_ref::<ProcessExit>() {
        Some(exit) => crate::Verdict::Exit { node: exit.node.clone(), code: exit.code },
        None => crate::Verdict::Crash {
            node: node.to_owned(),
            object,
            message: crate::runner::panic_message(payload),
        },
    }
}

/// libc's `exit`, reached through the dynamic linker past this definition.
#[cfg(all(madsim, target_os = "linux"))]
fn real_exit(code: c_int) -> ! {
    // SAFETY: `dlsym` with RTLD_NEXT and a NUL-terminated name is always sound to call; the symbol
    // it answers for `exit` is libc's `void exit(int)`.
    unsafe {
        let symbol = libc::dlsym(libc::RTLD_NEXT, c"exit".as_ptr());
        if symbol.is_null() {
            libc::_exit(code)
        }
        let exit: extern "C" fn(c_int) -> ! = std::mem::transmute(symbol);
        exit(code)
    }
}

/// The C `exit`: in a simulated run, unwind the calling task; elsewhere, libc's.
///
/// # Safety
/// Called as libc's `exit` is. Unwinding out of it is allowed (`C-unwind`): std's call into it
/// has no frame that would need to catch.
#[cfg(all(madsim, target_os = "linux"))]
#[unsafe(no_mangle)]
pub extern "C-unwind" fn exit(code: c_int) -> ! {
    if !crate::ambient::in_run() {
        real_exit(code)
    }
    // First, to keep the window in which another exiting thread would wait as short as can be.
    let released = std_exit_guard::release();
    let node =
        crate::ambient::current_node().map_or_else(|| "engine".to_owned(), |(_, node)| node.to_string());
    match released {
        Ok(()) => std::panic::resume_unwind(Box::new(ProcessExit { node, code })),
        Err(why) => {
            eprintln!(
                "kube-sim: node \"{node}\" called std::process::exit({code}) inside a simulated run, \
                 and it ends the process: {why}"
            );
            real_exit(code)
        }
    }
}

/// The C `pause`: on a thread in a run, std's exit guard is the only caller (another thread holds
/// it for an instant), so unwind to have the seed run again; elsewhere, libc's.
///
/// # Safety
/// Called as libc's `pause` is.
#[cfg(all(madsim, target_os = "linux"))]
#[unsafe(no_mangle)]
pub extern "C-unwind" fn pause() -> c_int {
    if crate::ambient::in_run() {
        std::panic::resume_unwind(Box::new(ExitCollision));
    }
    // SAFETY: as in `real_exit`; libc's `int pause(void)`.
    unsafe {
        let symbol = libc::dlsym(libc::RTLD_NEXT, c"pause".as_ptr());
        if symbol.is_null() {
            return -1;
        }
        let pause: extern "C" fn() -> c_int = std::mem::transmute(symbol);
        pause()
    }
}

/// std's record of the thread that called `std::process::exit`, cleared so that the next call of
/// any thread behaves as the first.
#[cfg(all(madsim, target_os = "linux"))]
mod std_exit_guard {
    use std::sync::OnceLock;
    use std::sync::atomic::{AtomicPtr, Ordering};

    use object::Object;
    use object::read::ReadRef;
    use object::read::elf::{ElfFile, FileHeader, SectionHeader, Sym};

    /// The part of the static's symbol name that every mangling of it contains.
    const GUARD: &str = "18unique_thread_exit17EXITING_THREAD_ID";
    /// The function that sets it: if the symbol table has neither, this std has no guard.
    const SETTER: &str = "unique_thread_exit";

    /// Where the guard is in this process, `None` if this std has none, or why it cannot be found.
    static ADDRESS: OnceLock<Result<Option<usize>, String>> = OnceLock::new();

    /// Find the guard (once per process).
    pub(super) fn prepare() {
        ADDRESS.get_or_init(find);
    }

    /// Clear the guard if this thread set it. `Err` when the guard exists but cannot be found or
    /// holds another thread's marker: then the exit cannot return safely.
    pub(super) fn release() -> Result<(), String> {
        let Some(address) = ADDRESS.get_or_init(find).clone()? else { return Ok(()) };
        // SAFETY: `address` is the address, in this running image, of std's `AtomicPtr<c_int>`
        // static named GUARD (its symbol, relocated by the image's load bias). Only a
        // compare-and-swap from this thread's own marker to null writes it.
        let guard = unsafe { &*(address as *const AtomicPtr<libc::c_int>) };
        // SAFETY: always sound; the address of this thread's errno, std's marker of the thread.
        let mine = unsafe { libc::__errno_location() };
        match guard.compare_exchange(mine, std::ptr::null_mut(), Ordering::SeqCst, Ordering::SeqCst) {
            Ok(_) => Ok(()),
            // `libc::exit` called directly: std's guard was never set.
            Err(found) if found.is_null() => Ok(()),
            Err(_) => Err("another thread of this process is exiting".to_owned()),
        }
    }

    fn find() -> Result<Option<usize>, String> {
        let path = "/proc/self/exe";
        let file = std::fs::File::open(path).map_err(|e| format!("cannot open {path}: {e}"))?;
        let cache = object::ReadCache::new(file);
        if cfg!(target_pointer_width = "64") {
            find_in::<object::elf::FileHeader64<object::Endianness>>(&cache, path)
        } else {
            find_in::<object::elf::FileHeader32<object::Endianness>>(&cache, path)
        }
    }

    /// [`find`] in the executable at `path`, read through `cache`.
    ///
    /// The symbol table is read in one piece and its string table in another: symbol names read
    /// one by one through the cache would take two system calls each, about 150,000 for the CLI
    /// (40 to 80 ms at every process start, 0.3 s in a debug test binary).
    fn find_in<Elf: FileHeader<Endian = object::Endianness>>(
        cache: &object::ReadCache<std::fs::File>,
        path: &str,
    ) -> Result<Option<usize>, String> {
        let unreadable = |e: &dyn std::fmt::Display| format!("cannot read {path}: {e}");
        let image = ElfFile::<Elf, _>::parse(cache).map_err(|e| unreadable(&e))?;
        let endian = image.endian();
        let sections = image.elf_section_table();
        let symbols = sections.symbols(endian, cache, object::elf::SHT_SYMTAB).map_err(|e| unreadable(&e))?;
        let strings_section = if symbols.is_empty() {
            None
        } else {
            Some(sections.section(symbols.string_section()).map_err(|e| unreadable(&e))?)
        };
        let (offset, size) = strings_section.and_then(|s| s.file_range(endian)).unwrap_or((0, 0));
        let strings = cache
            .read_bytes_at(offset, size)
            .map_err(|()| unreadable(&"the symbol table's strings are cut short"))?;
        let strings = object::StringTable::new(strings, 0, size);
        let name = |symbol: &Elf::Sym| symbol.name(endian, strings).map(String::from_utf8_lossy);
        // A pointer-sized symbol first: 748 of a debug test binary's 189,222 symbols are, and
        // reading every name (twice searched) was most of a small test's time unoptimized.
        let pointer_sized = |symbol: &&Elf::Sym| {
            let size: u64 = symbol.st_size(endian).into();
            size == std::mem::size_of::<usize>() as u64
        };
        for symbol in symbols.symbols().iter().filter(pointer_sized) {
            if name(symbol).is_ok_and(|name| name.contains(GUARD)) {
                // The load bias: where the entry point is now against where the file says.
                // SAFETY: getauxval has no preconditions.
                let entry = unsafe { libc::getauxval(libc::AT_ENTRY) } as u64;
                let bias = entry.wrapping_sub(image.entry());
                let address: u64 = symbol.st_value(endian).into();
                return Ok(Some(address.wrapping_add(bias) as usize));
            }
        }
        // Not found: an error if this std has the guard (its setter is named), else no guard.
        let setter =
            symbols.symbols().iter().any(|symbol| name(symbol).is_ok_and(|name| name.contains(SETTER)));
        if setter || symbols.is_empty() {
            Err(format!("std's exit guard ({GUARD}) is not in {path}'s symbol table (a stripped build?)"))
        } else {
            Ok(None)
        }
    }
}
