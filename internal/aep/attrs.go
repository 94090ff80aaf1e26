package aep

// coreAttrs are the sixteen context attributes plus data (AEP-0001 §5.1).
// No extension attribute may take one of these names.
var coreAttrs = map[string]bool{
	"aep": true, "id": true, "type": true, "subject": true, "time": true,
	"source": true, "agent": true, "session": true, "run": true, "step": true,
	"seq": true, "epoch": true, "cause": true, "traceparent": true,
	"severity": true, "capture": true, "data": true,
}

// validExtensionName reports whether name has the extension attribute form
// [a-z0-9]{1,20} (AEP-0001 §5.4). It does not check for core names.
func validExtensionName(name string) bool {
	if len(name) == 0 || len(name) > 20 {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if (c < 'a' || c > 'z') && (c < '0' || c > '9') {
			return false
		}
	}
	return true
}
