/* SPDX-License-Identifier: BSD-3-Clause */
/* AF_XDP ports when flakewire is built without lib/xdp (no clang, libbpf or libxdp). */
#include "app.h"
#include "log.h"
#include "port.h"

bool fwire_afxdp_wanted(const struct fw_conf_port *pc)
{
	return pc->mode == FW_CONF_PORT_AF_XDP;
}

int fwire_afxdp_prepare(struct fwire_app *app, uint32_t idx, char *devargs, size_t len)
{
	(void)app;
	(void)devargs;
	(void)len;
	FW_LOG(ERR,
	       "port%u: mode = af_xdp, but flakewire was built without lib/xdp (install "
	       "clang, libbpf-dev and libxdp-dev, then rebuild)",
	       idx);
	return -1;
}

int fwire_afxdp_started(struct fwire_app *app, uint32_t idx)
{
	(void)app;
	(void)idx;
	return -1;
}

void fwire_afxdp_closed(struct fwire_app *app, uint32_t idx)
{
	(void)app;
	(void)idx;
}
