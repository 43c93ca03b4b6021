"""The AddressSanitizer backend: flags, wrapping, the report-fold shim and the log grammar."""
