"""The SASS tier's machinery: read an sm_90a cubin, decode and analyse a kernel's
instructions, encode new ones, insert them, and write a cubin the driver loads."""
