package reset

import "github.com/jsctl/jsctl/jsutil"

// refuseServerOwned refuses, unless Options.Force, a change of a consumer
// the server made for a mirror or a source: the server keeps it where the
// mirror needs it, and moving it loses or repeats the mirror's messages.
func (p *planner) refuseServerOwned(c *Change) {
	if c.state == nil || p.opts.Force {
		return
	}
	if why := jsutil.ServerOwner(c.Consumer, c.state.info.Config.Metadata); why != "" {
		c.refuse(jsutil.ErrConflict, "it belongs to the server (%s); moving it breaks the mirror or source: pass --force to move it anyway", why)
	}
}
