"""This process's memory as Linux reports it, for the estimates: the resident size now and at its
peak, and a reset of the peak so that a measured stretch has a peak of its own."""


def memory_kb(field: str) -> int:
    """This process's VmRSS (resident now) or VmHWM (resident at its peak) in kB (/proc/self/status)."""
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise OSError(f"/proc/self/status has no {field}")


def reset_peak() -> None:
    """Reset VmHWM to the resident size now (writing 5 to /proc/self/clear_refs)."""
    with open("/proc/self/clear_refs", "w") as refs:
        refs.write("5")
