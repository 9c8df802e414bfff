package syncertest

import (
	"context"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/usersync/usersync/schema"
	"github.com/usersync/usersync/sync/warehouse"
)

// HistoryProblems checks what every history of the warehouse must satisfy
// whatever happened (faults, crashes, resumed runs): per user and team in
// user_team_versions, and per team, role and profile in their versions, no
// two intervals overlap or start together (so at most one is open) and none
// ends before it starts; and no user marked deleted has a membership in
// user_teams. It returns one line per violated rule, or nothing.
func HistoryProblems(ctx context.Context, store *warehouse.Store) []string {
	q := pgx.Identifier{store.Schema()}.Sanitize()
	checks := []struct{ what, sql string }{{"memberships of deleted users in user_teams",
		`SELECT count(*) FROM ` + q + `.user_teams ut JOIN ` + q + `.users u ON u.id = ut.user_id WHERE u.deleted_at IS NOT NULL`}}
	views := []struct{ view, key string }{{"user_team_versions", "user_id, team_id"}}
	for _, r := range schema.Dimensions() {
		views = append(views, struct{ view, key string }{r.Type + "_versions", r.Type + "_id"})
	}
	for _, h := range views {
		v := q + "." + h.view
		same := ""
		for _, k := range strings.Split(h.key, ", ") {
			same += " AND a." + k + " = b." + k
		}
		checks = append(checks,
			struct{ what, sql string }{"overlapping intervals in " + h.view, `SELECT count(*) FROM ` + v + ` a JOIN ` + v +
				` b ON a.valid_from < b.valid_from` + same + ` AND b.valid_from < coalesce(a.valid_to, 'infinity')`},
			struct{ what, sql string }{"intervals starting together in " + h.view,
				`SELECT count(*) FROM (SELECT 1 FROM ` + v + ` GROUP BY ` + h.key + `, valid_from HAVING count(*) > 1) d`},
			struct{ what, sql string }{"empty or reversed intervals in " + h.view, `SELECT count(*) FROM ` + v + ` WHERE valid_to <= valid_from`})
	}
	var out []string
	for _, c := range checks {
		var n int64
		if err := store.Pool().QueryRow(ctx, c.sql).Scan(&n); err != nil {
			out = append(out, c.what+": "+err.Error())
		} else if n > 0 {
			out = append(out, fmt.Sprintf("%d %s", n, c.what))
		}
	}
	return out
}
