/* softfido: a software CTAP2 authenticator for tests only (softfido.c says how to use it). */
#ifndef SOFTFIDO_H
#define SOFTFIDO_H

#include <stddef.h>
#include <fido.h>

/* Makes `dev` talk to the soft key: call before fido_dev_open(dev, "softfido:0"). */
int softfido_install(fido_dev_t *dev);

/* Puts the soft key at `index` of a device list (for fido_dev_new_with_info). */
int softfido_info_set(fido_dev_info_t *list, size_t index);

#endif
