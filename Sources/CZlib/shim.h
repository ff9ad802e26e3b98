#ifndef SYNCFS_CZLIB_SHIM_H
#define SYNCFS_CZLIB_SHIM_H
#include <zlib.h>
#endif
