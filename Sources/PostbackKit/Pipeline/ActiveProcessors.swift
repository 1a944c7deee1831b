#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The number of processors this process may run on.
///
/// On Linux this honours the CPU affinity mask (`taskset -c 0` means one), which the
/// verification width must follow; `sysconf` and Foundation's `activeProcessorCount` report
/// every online core. The mask is read from `/proc/self/status` because Glibc's Swift module
/// does not expose `sched_getaffinity`.
package enum ActiveProcessors {
    package static let count: Int = {
        let online = max(1, Int(sysconf(Int32(_SC_NPROCESSORS_ONLN))))
        guard let status = readSmallFile("/proc/self/status") else { return online }
        for line in status.split(separator: "\n") where line.hasPrefix("Cpus_allowed:") {
            let mask = line.dropFirst("Cpus_allowed:".count)
            var bits = 0
            for character in mask.utf8 {
                if let value = hexDigitValue(character) { bits += value.nonzeroBitCount }
            }
            return bits > 0 ? min(bits, online) : online
        }
        return online
    }()
}
