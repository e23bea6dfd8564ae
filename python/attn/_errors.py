"""attn's exceptions: one class per attn_status, each also a subclass of the
built-in exception a Python caller would catch for that kind of failure."""


class Error(Exception):
    """A failure of attn. ``status`` is the attn_status number (None for
    failures found before the C runtime was reached, such as a missing
    library) and ``message`` the runtime's attn_last_error() text or the
    Python layer's own message; str(error) is the message."""

    status = None
    status_name = None

    def __init__(self, message, status=None):
        super().__init__(message)
        self.message = message
        if status is not None:
            self.status = status


class InvalidArgumentError(Error, ValueError):
    """Bad input: shape, rank, dtype, device, stride, spec field
    (ATTN_ERROR_INVALID_ARGUMENT)."""
    status, status_name = 1, "ATTN_ERROR_INVALID_ARGUMENT"


class UnsupportedError(Error, NotImplementedError):
    """Valid, but this target cannot do it (ATTN_ERROR_UNSUPPORTED)."""
    status, status_name = 2, "ATTN_ERROR_UNSUPPORTED"


class CompileError(Error, RuntimeError):
    """The compiler failed: a bug in attn, please report it
    (ATTN_ERROR_COMPILE)."""
    status, status_name = 3, "ATTN_ERROR_COMPILE"


class BackendError(Error, RuntimeError):
    """A driver or execution failure (ATTN_ERROR_BACKEND)."""
    status, status_name = 4, "ATTN_ERROR_BACKEND"


class UnavailableError(Error, RuntimeError):
    """The target is not present here: no GPU, no driver, no JIT
    (ATTN_ERROR_UNAVAILABLE)."""
    status, status_name = 5, "ATTN_ERROR_UNAVAILABLE"


class OutOfMemoryError(Error, MemoryError):
    """A host or device allocation failed; the call had no effect
    (ATTN_ERROR_OUT_OF_MEMORY)."""
    status, status_name = 6, "ATTN_ERROR_OUT_OF_MEMORY"


class LibraryNotFoundError(Error, OSError):
    """libattn could not be loaded; the message lists where it looked."""


BY_STATUS = {c.status: c for c in (
    InvalidArgumentError, UnsupportedError, CompileError, BackendError,
    UnavailableError, OutOfMemoryError)}


def from_status(status, message):
    cls = BY_STATUS.get(status)
    if cls is None:  # a status this package does not know (a newer library)
        return Error("%s (attn_status %d)" % (message, status), status)
    return cls(message)


# Tracebacks and reprs name the public module (attn.InvalidArgumentError).
for _c in (Error, InvalidArgumentError, UnsupportedError, CompileError,
           BackendError, UnavailableError, OutOfMemoryError,
           LibraryNotFoundError):
    _c.__module__ = "attn"
del _c
