// zlib (gzip) and zstd, for reading compressed inputs (PostbackKit/Input/Decompressor.swift).
#include <zlib.h>
#include <zstd.h>
