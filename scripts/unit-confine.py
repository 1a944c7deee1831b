#!/usr/bin/env python3
"""Runs a command as postbackd.service's seccomp filters would, without systemd.

    python3 scripts/unit-confine.py COMMAND [ARGUMENT...]

Sets no_new_privs and a seccomp filter with the semantics of the unit's
RestrictAddressFamilies=AF_INET AF_INET6 AF_UNIX (socket() of another family fails with
EAFNOSUPPORT) and MemoryDenyWriteExecute=yes (mmap() of memory both writable and executable,
and mprotect()/pkey_mprotect() adding execute, fail with EPERM), then execs COMMAND, which
keeps them, as its children do. scripts/package-check.sh runs the packaged binary's main job
and serve under it, where systemd is not PID 1. x86-64 only: elsewhere it filters nothing.
"""
import ctypes
import os
import struct
import sys

LD, JEQ, RET, AND = 0x20, 0x15, 0x06, 0x54
ALLOW, ERRNO = 0x7fff0000, 0x00050000
EPERM, EAFNOSUPPORT = 1, 97
prog = []  # (code, jt_label, jf_label, k)
def ins(code, k, jt=None, jf=None): prog.append([code, jt, jf, k])
labels = {}
def label(name): labels[name] = len(prog)
# Classic BPF over struct seccomp_data: nr at 0, arch at 4, args[i]'s low half at 16 + 8 i.
ins(LD, 4); ins(JEQ, 0xc000003e, None, 'allow')  # AUDIT_ARCH_X86_64
ins(LD, 0)
# socket, mmap, mprotect, pkey_mprotect
ins(JEQ, 41, 'socket', None); ins(JEQ, 9, 'mmap', None); ins(JEQ, 10, 'mprot', None); ins(JEQ, 329, 'mprot', None)
ins(RET, ALLOW)
# AF_UNIX, AF_INET, AF_INET6
label('socket'); ins(LD, 16); ins(JEQ, 1, 'allow', None); ins(JEQ, 2, 'allow', None); ins(JEQ, 10, 'allow', None)
ins(RET, ERRNO | EAFNOSUPPORT)
# PROT_WRITE | PROT_EXEC, PROT_EXEC
label('mmap'); ins(LD, 32); ins(AND, 6); ins(JEQ, 6, 'eperm', 'allow')
label('mprot'); ins(LD, 32); ins(AND, 4); ins(JEQ, 4, 'eperm', 'allow')
label('eperm'); ins(RET, ERRNO | EPERM)
label('allow'); ins(RET, ALLOW)
raw = b''
for i, (code, jt, jf, k) in enumerate(prog):
    off = lambda l: 0 if l is None else labels[l] - i - 1
    raw += struct.pack('HBBI', code, off(jt), off(jf), k)
buf = ctypes.create_string_buffer(raw, len(raw))
class Fprog(ctypes.Structure): _fields_ = [('len', ctypes.c_ushort), ('filter', ctypes.c_void_p)]
fp = Fprog(len(prog), ctypes.addressof(buf))
libc = ctypes.CDLL(None, use_errno=True)
libc.prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_void_p, ctypes.c_ulong, ctypes.c_ulong]
if libc.prctl(38, 1, None, 0, 0) != 0:  # PR_SET_NO_NEW_PRIVS
    sys.exit("unit-confine.py: no_new_privs: " + os.strerror(ctypes.get_errno()))
if libc.prctl(22, 2, ctypes.addressof(fp), 0, 0) != 0:  # PR_SET_SECCOMP, SECCOMP_MODE_FILTER
    sys.exit("unit-confine.py: seccomp: " + os.strerror(ctypes.get_errno()))
os.execv(sys.argv[1], sys.argv[1:])
