/* SPDX-License-Identifier: BSD-3-Clause */
/* flakewire: parses options and wires the parts together. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_eal.h>
#include <rte_launch.h>
#include <rte_lcore.h>
#include <rte_malloc.h>

#include "app.h"
#include "fw_err.h"
#include "fw_responder_conf.h"
#include "fw_version.h"
#include "log.h"
#include "responder.h"
#include "options.h"
#include "poll.h"
#include "stats.h"
#include "telemetry.h"

static volatile bool force_quit;
int fwire_logtype;

static void on_signal(int sig)
{
	(void)sig;
	force_quit = true;
}

int main(int argc, char **argv)
{
	struct fwire_app *app;
	enum fwire_mode mode;
	int eal_argc, rc;

	app = calloc(1, sizeof(*app));
	if (!app)
		return 1;
	if (fwire_options_parse(argc, argv, &app->conf, &mode, &eal_argc))
		return 2;
	switch (mode) {
	case FW_MODE_HELP:
		fwire_options_usage(argv[0]);
		return 0;
	case FW_MODE_PRINT_CONFIG: /* the sample: every default */
		return fw_conf_print(stdout, NULL, 0) ? 1 : 0;
	case FW_MODE_PRINT_EFFECTIVE:
		return fw_conf_print(stdout, &app->conf, 0) ? 1 : 0;
	case FW_MODE_CHECK_CONFIG:
		printf("flakewire: configuration OK\n");
		return 0;
	case FW_MODE_VERSION:
		printf("flakewire %s\n", FW_VERSION);
		return 0;
	case FW_MODE_RUN:
		break;
	}

	/* Before EAL init, so a stop request during start-up is a clean stop. */
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	/* before any thread exists: only the lcores take net_tap's signal (poll.h) */
	fwire_lcore_signals(true);
	app->quit = &force_quit;

	if (rte_eal_init(eal_argc, argv) < 0) {
		fprintf(stderr, "flakewire: EAL initialisation failed: %s\n",
			rte_strerror(rte_errno));
		return 1;
	}
	fwire_logtype = rte_log_register_type_and_pick_level("flakewire", RTE_LOG_INFO);
	if (fwire_logtype < 0)
		fwire_logtype = RTE_LOGTYPE_USER1;
	char lerr[512];
	rc = fw_responder_state_lock(&app->conf, rte_lcore_count(), &app->lock, lerr, sizeof(lerr));
	if (rc)
		FW_LOG(ERR, "%s; refusing to start", lerr);
	if (!rc)
		rc = fwire_responder_create(app);
	if (!rc)
		rc = fwire_lcores_init(app);
	if (!rc)
		rc = fwire_responder_start_keeper(app);
	if (!rc)
		rc = fwire_ports_open(app);
	if (!rc)
		rc = fwire_telemetry_register(app);
	if (!rc)
		rc = fw_responder_metrics_start(app->core);
	if (!rc)
		rc = fwire_responder_start_control(app);
	if (rc) {
		fwire_telemetry_close();
		if (app->core) {
			fw_responder_metrics_stop(app->core);
			/* the keeper started: lower its reservation to the final mark */
			fwire_responder_stop_control(app);
			fw_responder_fleet_stop(app->core);
		}
		fwire_ports_close(app);
		if (rte_eal_cleanup())
			fprintf(stderr, "flakewire: EAL cleanup failed\n");
		return 1;
	}

	FW_LOG(INFO, "running on %u lcore(s); Ctrl-C or SIGTERM stops", app->n_lcores);
	app->serving = true;
	rc = rte_eal_mp_remote_launch(fwire_lcore_main, app, CALL_MAIN);
	if (rc) {
		/* a worker lcore was busy: nothing served; stop what did start */
		FW_LOG(ERR, "cannot launch the lcores: %s", rte_strerror(-rc));
		force_quit = true;
	}
	rte_eal_mp_wait_lcore();
	app->serving = false;

	FW_LOG(INFO, "stopping");
	fw_responder_metrics_stop(app->core);
	if (fwire_responder_stop_control(app))
		rc = 1; /* the final mark failed: the next start waits for the reservation */
	else
		fw_responder_fleet_release(app->core); /* the final mark persisted: IDs go back */
	/* before the first free: no telemetry command reads what follows frees */
	fwire_telemetry_close();
	fw_responder_fleet_stop(app->core);
	fw_state_lock_free(app->lock); /* after the final mark */
	struct fwire_stats_line totals = {0};
	fwire_stats_line(app, &totals, 0);
	fwire_ports_close(app);
	rte_free(app->lcore);
	if (rte_eal_cleanup()) {
		fprintf(stderr, "flakewire: EAL cleanup failed: %s\n", rte_strerror(rte_errno));
		rc = 1;
	}
	fw_responder_free(app->core); /* after EAL cleanup: telemetry read the keeper */
	free(app);
	return rc ? 1 : 0;
}
