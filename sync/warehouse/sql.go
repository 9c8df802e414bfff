package warehouse

import (
	"github.com/usersync/usersync/schema"
	"github.com/usersync/usersync/sync/warehouse/sqlfile"
)

// runSQL holds the run bookkeeping, status and membership statements (see
// sql/runs.sql), rendered for one schema.
type runSQL struct {
	startRun, unfinishedRuns, abandonRuns, finishRun, endRun    string
	failedRunToResume, watermark, reopenRun, runOfJob, touchRun string
	status, credentialsRefused, lastRuns, writeProbe, quietRun  string
}

func newRunSQL(schemaName string) (runSQL, error) {
	st, err := sqlfile.Load(sqlFiles, "runs", map[string]string{"schema": schema.QuoteIdentifier(schemaName), "run_columns": runColumns})
	if err != nil {
		return runSQL{}, err
	}
	var q runSQL
	err = sqlfile.Assign("runs", st, map[string]*string{
		"startRun": &q.startRun, "unfinishedRuns": &q.unfinishedRuns, "abandonRuns": &q.abandonRuns,
		"finishRun": &q.finishRun, "endRun": &q.endRun,
		"failedRunToResume": &q.failedRunToResume, "watermark": &q.watermark, "reopenRun": &q.reopenRun,
		"runOfJob": &q.runOfJob, "touchRun": &q.touchRun, "status": &q.status, "credentialsRefused": &q.credentialsRefused, "lastRuns": &q.lastRuns,
		"writeProbe": &q.writeProbe, "quietRun": &q.quietRun,
	})
	return q, err
}
