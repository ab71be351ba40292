#!/usr/bin/python3
# stuckfs.py MOUNTPOINT -- a FUSE filesystem with one file, stuck.txt,
# whose reads never answer (until unmounted): a file a user can hand to a
# privileged process to make it wait forever.  Tests use it to prove such
# a read is bounded in time.  Runs in the foreground; unmount to stop.
import errno, stat, sys, threading, time
from fusepy import FUSE, FuseOSError, Operations

class Stuck(Operations):
    def __init__(self):
        self.gone = threading.Event()

    def getattr(self, path, fh=None):
        now = time.time()
        if path == "/":
            return dict(st_mode=stat.S_IFDIR | 0o755, st_nlink=2,
                        st_ctime=now, st_mtime=now, st_atime=now)
        if path == "/stuck.txt":
            return dict(st_mode=stat.S_IFREG | 0o644, st_nlink=1, st_size=64,
                        st_ctime=now, st_mtime=now, st_atime=now)
        raise FuseOSError(errno.ENOENT)

    def readdir(self, path, fh):
        return [".", "..", "stuck.txt"]

    def read(self, path, size, offset, fh):
        self.gone.wait(600)	# never answers while mounted
        raise FuseOSError(errno.EIO)

    def destroy(self, path):
        self.gone.set()

if __name__ == "__main__":
    FUSE(Stuck(), sys.argv[1], foreground=True, allow_other=True,
         nothreads=False, direct_io=True)
