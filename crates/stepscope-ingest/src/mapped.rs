//! A mapped file that cannot kill the process when it shrinks while read.
//!
//! Reading a page of a mapping past the end of a file that was cut after it was mapped
//! raises `SIGBUS`, which kills the process (a notebook's kernel with it) with nothing
//! printed. A trace being written by a profiler, or rotated by a script, while it is analysed
//! is common enough that this must be an error naming the file, not a crash.
//!
//! Every mapping made here is listed in a fixed table of slots. A `SIGBUS` handler, installed
//! when the first file is mapped, looks the faulting address up: inside a listed mapping, it
//! puts zeroed anonymous pages (`mmap` with `MAP_FIXED`, async-signal-safe) from the faulting
//! page to the mapping's end and marks the slot, so the reading instruction runs again and
//! reads zeros; anywhere else, it hands the signal to the handler that was there before (the
//! Rust runtime's, Python's `faulthandler`), or to the default action. The reader asks
//! [`GuardedMap::changed`] once it is done: a marked mapping, or a file whose length or
//! modification time is no longer what it was when mapped, is "changed while it was read",
//! whatever the parser made of the zeros. Zero-filling instead of crashing is what Meta's
//! `indexedlog` (Sapling) does for pages a filesystem cannot read.
//!
//! When every slot is taken, or off Unix, the file is read into memory instead: slower for a
//! large file, never unsafe.

use std::fs::File;
use std::io::Read;
use std::ops::Deref;
use std::time::SystemTime;

/// A file's bytes as mapped (guarded) or, failing that, read into memory; what it was when
/// mapped, to tell whether it changed since.
#[derive(Debug)]
pub(crate) struct GuardedMap {
    bytes: Held,
    file: File,
    stamp: Stamp,
}

#[derive(Debug)]
enum Held {
    #[cfg(unix)]
    Mapped(unix::Guarded),
    Read(Vec<u8>),
}

/// A file's length and modification time.
#[derive(Debug, PartialEq, Eq, Clone, Copy)]
struct Stamp {
    len: u64,
    modified: Option<SystemTime>,
}

impl Stamp {
    fn of(file: &File) -> std::io::Result<Self> {
        let metadata = file.metadata()?;
        Ok(Stamp {
            len: metadata.len(),
            modified: metadata.modified().ok(),
        })
    }
}

impl GuardedMap {
    /// Maps `file` (guarded), or reads it into memory where it cannot be guarded; an empty
    /// file is an empty buffer.
    pub(crate) fn new(file: File) -> std::io::Result<Self> {
        let stamp = Stamp::of(&file)?;
        let bytes = match stamp.len {
            0 => Held::Read(Vec::new()),
            _ => hold(&file, stamp.len)?,
        };
        Ok(GuardedMap { bytes, file, stamp })
    }

    /// Whether the file changed since it was mapped: a page read past its new end (the read
    /// saw zeros there), or a length or modification time that is no longer the same.
    pub(crate) fn changed(&self) -> bool {
        let cut = match &self.bytes {
            #[cfg(unix)]
            Held::Mapped(guarded) => guarded.cut(),
            Held::Read(_) => false,
        };
        cut || Stamp::of(&self.file).map_or(true, |now| now != self.stamp)
    }
}

#[cfg(unix)]
fn hold(file: &File, len: u64) -> std::io::Result<Held> {
    match unix::Guarded::map(file)? {
        Some(guarded) => Ok(Held::Mapped(guarded)),
        None => read_whole(file, len),
    }
}

#[cfg(not(unix))]
fn hold(file: &File, len: u64) -> std::io::Result<Held> {
    read_whole(file, len)
}

/// The file read into memory, at most `len` bytes (what it held when opened).
fn read_whole(mut file: &File, len: u64) -> std::io::Result<Held> {
    let mut bytes = Vec::with_capacity(usize::try_from(len).unwrap_or(0));
    file.by_ref().take(len).read_to_end(&mut bytes)?;
    Ok(Held::Read(bytes))
}

impl Deref for GuardedMap {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match &self.bytes {
            #[cfg(unix)]
            Held::Mapped(guarded) => guarded,
            Held::Read(bytes) => bytes,
        }
    }
}

#[cfg(unix)]
#[allow(unsafe_code)]
mod unix {
    //! The slots, the handler and the mapping: the only unsafe code of the readers.

    use memmap2::Mmap;
    use std::sync::Mutex;
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

    /// Mappings guarded at once; a read maps one file at a time per thread, so this is
    /// room for many files read in parallel (beyond it, files are read into memory).
    const SLOTS: usize = 64;

    /// One guarded mapping: `[start, end)` with `end` rounded up to a page (0: free).
    struct Slot {
        start: AtomicUsize,
        end: AtomicUsize,
        cut: AtomicBool,
    }

    #[allow(clippy::declare_interior_mutable_const)]
    const FREE: Slot = Slot {
        start: AtomicUsize::new(0),
        end: AtomicUsize::new(0),
        cut: AtomicBool::new(false),
    };
    static TABLE: [Slot; SLOTS] = [FREE; SLOTS];
    /// The page size, read when the handler is installed.
    static PAGE: AtomicUsize = AtomicUsize::new(4096);
    /// The handler there was before ours (`sa_sigaction`) and its flags.
    static PREVIOUS: AtomicUsize = AtomicUsize::new(libc::SIG_DFL);
    static PREVIOUS_FLAGS: AtomicUsize = AtomicUsize::new(0);
    /// Serialises installing the handler.
    static INSTALLING: Mutex<()> = Mutex::new(());

    /// A read-only mapping listed in [`TABLE`] while it lives.
    pub(super) struct Guarded {
        map: Mmap,
        slot: usize,
    }

    impl std::fmt::Debug for Guarded {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.debug_struct("Guarded")
                .field("len", &self.map.len())
                .finish()
        }
    }

    impl Guarded {
        /// Maps `file` and lists the mapping; `None` when the handler cannot be installed
        /// or every slot is taken.
        pub(super) fn map(file: &std::fs::File) -> std::io::Result<Option<Guarded>> {
            if !install() {
                return Ok(None);
            }
            // SAFETY: a read-only private mapping; a page past a new end of the file reads
            // as zeros (the handler below), and the reader then reports the file changed.
            let map = unsafe { Mmap::map(file)? };
            let start = map.as_ptr() as usize;
            let page = PAGE.load(Ordering::Relaxed);
            let end = (start + map.len()).div_ceil(page) * page;
            Ok(claim(start, end).map(|slot| Guarded { map, slot }))
        }

        /// Whether a page past the file's end was read (and zero-filled).
        pub(super) fn cut(&self) -> bool {
            TABLE[self.slot].cut.load(Ordering::Acquire)
        }
    }

    impl std::ops::Deref for Guarded {
        type Target = [u8];
        fn deref(&self) -> &[u8] {
            &self.map
        }
    }

    impl Drop for Guarded {
        fn drop(&mut self) {
            // Listed no more before `map` is unmapped (after this function).
            let slot = &TABLE[self.slot];
            slot.end.store(0, Ordering::Release);
            slot.cut.store(false, Ordering::Relaxed);
            slot.start.store(0, Ordering::Release);
        }
    }

    /// Takes a free slot for `[start, end)`.
    fn claim(start: usize, end: usize) -> Option<usize> {
        (0..SLOTS).find(|&index| {
            let slot = &TABLE[index];
            let free = slot
                .start
                .compare_exchange(0, start, Ordering::AcqRel, Ordering::Relaxed)
                .is_ok();
            if free {
                slot.cut.store(false, Ordering::Relaxed);
                slot.end.store(end, Ordering::Release);
            }
            free
        })
    }

    /// Installs [`on_sigbus`] unless it is the handler already (something installed after
    /// it, such as `faulthandler.enable()` in Python, is chained to from then on).
    fn install() -> bool {
        let _installing = INSTALLING
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        // SAFETY: plain libc calls on zeroed structures they fill in.
        unsafe {
            let mut current: libc::sigaction = std::mem::zeroed();
            if libc::sigaction(libc::SIGBUS, std::ptr::null(), &mut current) != 0 {
                return false;
            }
            if current.sa_sigaction == on_sigbus as *const () as usize {
                return true;
            }
            let page = libc::sysconf(libc::_SC_PAGESIZE);
            if page > 0 {
                PAGE.store(page as usize, Ordering::Relaxed);
            }
            let mut ours: libc::sigaction = std::mem::zeroed();
            ours.sa_sigaction = on_sigbus as *const () as usize;
            ours.sa_flags = libc::SA_SIGINFO | libc::SA_ONSTACK;
            libc::sigemptyset(&mut ours.sa_mask);
            PREVIOUS.store(current.sa_sigaction, Ordering::Release);
            PREVIOUS_FLAGS.store(current.sa_flags as usize, Ordering::Release);
            libc::sigaction(libc::SIGBUS, &ours, std::ptr::null_mut()) == 0
        }
    }

    /// The slot whose mapping holds `address`.
    fn find(address: usize) -> Option<&'static Slot> {
        TABLE.iter().find(|slot| {
            let start = slot.start.load(Ordering::Acquire);
            start != 0 && address >= start && address < slot.end.load(Ordering::Acquire)
        })
    }

    /// The `SIGBUS` handler: only atomics, `mmap` and `sigaction` (async-signal-safe).
    extern "C" fn on_sigbus(
        signal: libc::c_int,
        info: *mut libc::siginfo_t,
        context: *mut libc::c_void,
    ) {
        // SAFETY: the kernel passes a valid siginfo for SA_SIGINFO handlers.
        let address = unsafe { (*info).si_addr() } as usize;
        if let Some(slot) = find(address) {
            let page = PAGE.load(Ordering::Relaxed);
            let from = address / page * page;
            let end = slot.end.load(Ordering::Acquire);
            // SAFETY: replaces pages of our own listed mapping, which its owner unmaps whole.
            let zeroed = unsafe {
                libc::mmap(
                    from as *mut libc::c_void,
                    end - from,
                    libc::PROT_READ,
                    libc::MAP_PRIVATE | libc::MAP_ANON | libc::MAP_FIXED,
                    -1,
                    0,
                )
            };
            if zeroed != libc::MAP_FAILED {
                slot.cut.store(true, Ordering::Release);
                return;
            }
        }
        forward(signal, info, context);
    }

    /// Hands a `SIGBUS` that is not ours to the handler that was there before, or restores
    /// the default action, so that the fault, raised again on return, ends the process as
    /// it would have.
    fn forward(signal: libc::c_int, info: *mut libc::siginfo_t, context: *mut libc::c_void) {
        let previous = PREVIOUS.load(Ordering::Acquire);
        let flags = PREVIOUS_FLAGS.load(Ordering::Acquire) as libc::c_int;
        if previous == libc::SIG_DFL || previous == libc::SIG_IGN {
            // SAFETY: restoring the default action of a signal.
            unsafe {
                let mut default: libc::sigaction = std::mem::zeroed();
                default.sa_sigaction = libc::SIG_DFL;
                libc::sigaction(libc::SIGBUS, &default, std::ptr::null_mut());
            }
            return;
        }
        // SAFETY: `previous` was a handler installed for SIGBUS, called as its flags say.
        unsafe {
            if flags & libc::SA_SIGINFO != 0 {
                let handler: extern "C" fn(libc::c_int, *mut libc::siginfo_t, *mut libc::c_void) =
                    std::mem::transmute(previous);
                handler(signal, info, context);
            } else {
                let handler: extern "C" fn(libc::c_int) = std::mem::transmute(previous);
                handler(signal);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    /// The tests here take slots, one of them all of them: one at a time.
    static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

    fn serial() -> std::sync::MutexGuard<'static, ()> {
        ONE_AT_A_TIME
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    #[test]
    fn a_file_cut_while_mapped_reads_as_zeros_and_is_changed() {
        let _serial = serial();
        let mut file = tempfile::NamedTempFile::new().unwrap();
        let text = vec![b'x'; 3 << 20];
        file.write_all(&text).unwrap();
        file.flush().unwrap();
        let map = GuardedMap::new(File::open(file.path()).unwrap()).unwrap();
        assert!(!map.changed());
        assert_eq!(&map[..10], b"xxxxxxxxxx");
        file.as_file().set_len(4096).unwrap();
        // Without the guard, this read of a page past the new end kills the test binary.
        let past_end: u64 = map[8192..].iter().map(|&b| u64::from(b)).sum();
        assert_eq!(past_end, 0);
        assert!(map.changed());
        assert_eq!(map[100], b'x', "pages before the cut keep their bytes");
    }

    #[test]
    fn a_file_rewritten_in_place_is_changed() {
        let _serial = serial();
        let mut file = tempfile::NamedTempFile::new().unwrap();
        file.write_all(b"{\"traceEvents\": []}").unwrap();
        file.flush().unwrap();
        let map = GuardedMap::new(File::open(file.path()).unwrap()).unwrap();
        assert!(!map.changed());
        file.as_file().write_all(b" ").unwrap();
        file.flush().unwrap();
        assert!(map.changed(), "a longer file is a changed one");
    }

    #[test]
    fn many_mappings_at_once_are_all_readable() {
        let _serial = serial();
        let mut file = tempfile::NamedTempFile::new().unwrap();
        file.write_all(b"abc").unwrap();
        file.flush().unwrap();
        // More than the slots: the rest are read into memory.
        let maps: Vec<_> = (0..100)
            .map(|_| GuardedMap::new(File::open(file.path()).unwrap()).unwrap())
            .collect();
        assert!(maps.iter().all(|map| &map[..] == b"abc" && !map.changed()));
    }
}
