//! A server that outlived its stop. Stopping a booted server ends its process group, but a
//! launcher that daemonises (`setsid vllm serve … &`, a wrapper that double-forks) leaves
//! the real server in another group: the group is gone and the port still answers. So after
//! every stop the port is checked; while it answers the server is still running, and the
//! process listening on it is found from `/proc/net/tcp{,6}` (its socket's inode) and
//! `/proc/*/fd` (the process holding that socket), so the record can say what to stop.

use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::time::{Duration, Instant};

/// How long a stopped server's port may keep answering (its sockets closing).
const CLOSING: Duration = Duration::from_secs(3);

/// A server still answering after its stop: the process listening on its port, if seen.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StillRunning {
    /// The listening process (none found: another user's, or outside this `/proc`).
    pub pid: Option<i32>,
    /// The port.
    pub port: u16,
}

/// Whether the server at `url` (`http://HOST:PORT`) still answers [`CLOSING`] after it was
/// stopped, and who listens there.
pub fn still_running(url: &str) -> Option<StillRunning> {
    let address = address(url)?;
    stays(address, true).then(|| found(address))
}

/// Whether a server starts answering at `url` within [`CLOSING`] (a launcher that exited
/// before its daemonised server bound the port), and who listens there.
pub fn answering_soon(url: &str) -> Option<StillRunning> {
    let address = address(url)?;
    (!stays(address, false)).then(|| found(address))
}

/// Polls `address` for up to [`CLOSING`] while whether it answers is `now`; whether that
/// still holds at the end.
fn stays(address: SocketAddr, now: bool) -> bool {
    let deadline = Instant::now() + CLOSING;
    while answers(address) == now {
        if Instant::now() >= deadline {
            return true;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    false
}

/// What answers at `address`: its port, and the process listening there.
fn found(address: SocketAddr) -> StillRunning {
    let port = address.port();
    StillRunning {
        pid: listener(port),
        port,
    }
}

fn address(url: &str) -> Option<SocketAddr> {
    let rest = url.split_once("://").map_or(url, |(_, rest)| rest);
    let host_port = rest.split('/').next()?;
    host_port.to_socket_addrs().ok()?.next()
}

fn answers(address: SocketAddr) -> bool {
    TcpStream::connect_timeout(&address, Duration::from_millis(300)).is_ok()
}

/// The process holding the socket that listens on `port`, from `/proc`.
pub fn listener(port: u16) -> Option<i32> {
    let inodes: Vec<String> = ["/proc/net/tcp", "/proc/net/tcp6"]
        .iter()
        .filter_map(|table| std::fs::read_to_string(table).ok())
        .flat_map(|text| listening_inodes(&text, port))
        .collect();
    if inodes.is_empty() {
        return None;
    }
    let wanted: Vec<String> = inodes.iter().map(|i| format!("socket:[{i}]")).collect();
    std::fs::read_dir("/proc")
        .ok()?
        .flatten()
        .find_map(|entry| {
            let pid: i32 = entry.file_name().to_str()?.parse().ok()?;
            let fds = std::fs::read_dir(entry.path().join("fd")).ok()?;
            fds.flatten()
                .filter_map(|fd| std::fs::read_link(fd.path()).ok())
                .any(|link| wanted.iter().any(|w| link.as_os_str() == w.as_str()))
                .then_some(pid)
        })
}

/// Inodes of the sockets a `/proc/net/tcp` table lists as listening (state `0A`) on `port`.
fn listening_inodes(table: &str, port: u16) -> Vec<String> {
    table
        .lines()
        .skip(1)
        .filter_map(|line| {
            let fields: Vec<&str> = line.split_whitespace().collect();
            let local_port = fields.get(1)?.rsplit(':').next()?;
            let listening = *fields.get(3)? == "0A";
            let same = u16::from_str_radix(local_port, 16).ok()? == port;
            let inode = (*fields.get(9)?).to_owned();
            (listening && same).then_some(inode)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_listening_socket_is_found_with_its_process() {
        let socket = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = socket.local_addr().unwrap().port();
        assert_eq!(listener(port), Some(std::process::id() as i32));
        let url = format!("http://127.0.0.1:{port}");
        drop(socket);
        assert_eq!(still_running(&url), None);
    }

    #[test]
    fn the_tcp_table_is_read_by_state_and_port() {
        let table = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n   0: 0100007F:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 4242 1\n   1: 0100007F:1F90 0100007F:9C40 01 00000000:00000000 00:00000000 00000000     0        0 4343 1\n";
        assert_eq!(listening_inodes(table, 8080), ["4242"]);
        assert!(listening_inodes(table, 8000).is_empty());
    }
}
