#ifndef SYNCFS_CARGON2_SHIM_H
#define SYNCFS_CARGON2_SHIM_H
#include <argon2.h>
#endif
