//! Parse threads that give way to the thread they wait for.
//!
//! A compressed read is bounded by its one inflating thread; its parse threads only keep up
//! with it. With as many parse threads as cores, the scheduler shares the cores among all of
//! them alike, and the inflating thread lost 50 to 240 ms of the benchmark's 0.8–1.1 s
//! `.json.gz` read waiting to run (`/proc/thread-self/schedstat`), while each parse thread
//! also sat idle for a third to a half of it waiting for text. At nice 10 the parse threads run when
//! the inflating thread does not need the core: it waited 6 to 23 ms, and the read took
//! 0.775 s instead of 0.830 s (medians of 8 alternating runs).

/// How much lower the parse threads' priority is: their CPU weight against the inflating
/// thread's is 110 to 1024 (the kernel's table), so it gets ~90 % of a core it shares.
#[cfg(target_os = "linux")]
const NICENESS: libc::c_int = 10;

/// Lowers the calling thread's priority, for a thread that only keeps up with another. On
/// Linux, where a priority is a thread's own; elsewhere (where it is the whole process's)
/// nothing is done. A failure changes nothing but the speed, so it is not reported.
pub(crate) fn give_way() {
    #[cfg(target_os = "linux")]
    // SAFETY: `gettid` and `setpriority` take and return integers only; raising one's own
    // niceness needs no privilege and touches no memory of this process.
    #[allow(unsafe_code)]
    unsafe {
        let thread = libc::gettid();
        let own = libc::getpriority(libc::PRIO_PROCESS, thread as libc::id_t);
        libc::setpriority(
            libc::PRIO_PROCESS,
            thread as libc::id_t,
            own.saturating_add(NICENESS).min(19),
        );
    }
}
