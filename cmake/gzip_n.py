#!/usr/bin/env python3
"""gzip -9n IN > OUT: no file name, no time stamp, so the bytes depend on IN only
(reproducible packages; lintian's package-contains-timestamped-gzip).

usage: gzip_n.py IN OUT
"""
import gzip
import sys

with open(sys.argv[1], "rb") as src, open(sys.argv[2], "wb") as out:
    with gzip.GzipFile(filename="", mode="wb", compresslevel=9, fileobj=out, mtime=0) as z:
        z.write(src.read())
