// Package scheduler runs agents' scheduled jobs (R-JOB, SPEC §9) on gocron,
// in the owner's timezone.
//
// # Delivery semantics
//
//   - The scheduler is the single writer of every crew.job.<id> scope; it
//     folds those scopes from the log at start (the jobs projection is only
//     a read model for the API) and appends with the expected sequence.
//   - A due job appends JobFired first, then opens the job's own
//     conversation (job-<id>-<YYYYMMDDHHMM> of the due time, channel
//     job:<id>, autonomous) with the prompt as a MessageReceived whose
//     ExternalID is "job:<JobFired id>", then kicks the worker. Jobs bypass
//     Inbound (R-IN-5).
//   - At-least-once: a firing without JobCompleted is open. At start an open
//     firing whose message is not stored is delivered again (the ExternalID
//     makes that idempotent); one whose message is stored is left to the
//     loop's recovery (and kicked). A script firing interrupted before its
//     conversation existed is completed as failed, not run again: scripts
//     may have side effects.
//   - A prompt job's JobCompleted follows the first run_finished of its
//     conversation (done → ok, halted/failed → failed), watched with
//     Log.Follow on crew.conv.*.run_finished; at start, open firings whose
//     run finished while the scheduler was down are completed from the log.
//   - Missed while down: at start a cron job whose last due time is before
//     its most recent due time fires once, for that most recent time, not
//     once per missed tick. A profile job that never fired is not caught
//     up (nothing says when it was added); a chat job is caught up from its
//     JobScheduled. A one-shot whose time passed fires once at start.
//   - Retries: a one-shot's firing that failed (run failed or cut by
//     crashes, delivery or script error) stores JobRetryScheduled with its
//     JobCompleted and fires again after Config.RetryDelays (10, 30, 90 s)
//     on conversation <first>-r<attempt>; at start a stored retry is armed
//     again (at once if its time passed). Not retried: a stopped run, a
//     run halted on a rule, a script or consolidation cut by a restart.
package scheduler
