package apisim

import (
	"strings"
	"unicode/utf8"
)

// text is a string value with its JSON-escaped form computed once, so that
// encoding a pooled value is a plain append.
type text struct {
	raw  string // the value
	esc  string // JSON-escaped, without quotes
	slug string // lower-case ASCII form, for names that feed emails and usernames
}

func newText(raw string) text { return text{raw: raw, esc: string(appendEscaped(nil, raw))} }

func texts(raws ...string) []text {
	out := make([]text, len(raws))
	for i, r := range raws {
		out[i] = newText(r)
	}
	return out
}

// names builds name texts from "display|slug" pairs.
func names(pairs ...string) []text {
	out := make([]text, len(pairs))
	for i, p := range pairs {
		raw, slug, _ := strings.Cut(p, "|")
		out[i] = newText(raw)
		out[i].slug = slug
	}
	return out
}

// pools holds every value list the generator draws from. It is built once
// per Server (the package keeps no globals).
type pools struct {
	firstNames, lastNames           []text
	titles, jobRoles, customs       []text
	voicemails, timezones           []text
	tabs, tracking, regions         []text
	countryCodes, scimSources       []text
	domains, duties, languages      []text
	teamNames, roleNames, colors    []text
	maxCustoms, maxVoicemails       []text // strings at exactly their maximum length
	inboundBehaviors, inboundPhones []text
	voices, promptTypes, phoneTypes []text
	providers                       []string
	profileNames                    []string
	maxCustomLen, maxVoicemailLen   int // rune counts, from the schema
}

// newPools builds the value lists.
func newPools(maxCustomLen, maxVoicemailLen int) *pools {
	p := &pools{maxCustomLen: maxCustomLen, maxVoicemailLen: maxVoicemailLen}
	p.addPersonNames()
	p.addFreeTexts()
	p.addVocabularies()
	p.addMaxLengthTexts()
	return p
}

// addPersonNames fills the first and last names, with the slugs that feed
// emails and usernames.
func (p *pools) addPersonNames() {
	p.firstNames = names(
		"James|james", "Mary|mary", "Robert|robert", "Patricia|patricia", "John|john", "Jennifer|jennifer",
		"Michael|michael", "Linda|linda", "David|david", "Elizabeth|elizabeth", "William|william",
		"Sarah|sarah", "José|jose", "Zoë|zoe", "Émilie|emilie", "Jürgen|jurgen", "Søren|soren",
		"Łukasz|lukasz", "Ólafur|olafur", "François|francois", "Ünal|unal", "Björk|bjork",
		"李|li", "王芳|wangfang", "さくら|sakura", "Аня|anya", "محمد|mohammed", "Nguyễn Văn|nguyenvan",
		"D'Angelo|dangelo", "Mary-Jane|maryjane", `Robert "Bob"|bob`, "<b>Bold</b> & Co|bold",
		"🚀 Rocket|rocket", "Siobhán|siobhan", "Ngozi|ngozi", "Priya|priya", "Kwame|kwame",
		"Ana Lucía|analucia", "Chloé|chloe", "Yusuf|yusuf",
	)
	p.lastNames = names(
		"Smith|smith", "Johnson|johnson", "Williams|williams", "Brown|brown", "Jones|jones",
		"García|garcia", "Müller|muller", "O'Brien|obrien", "O'Connor|oconnor", "Dvořák|dvorak",
		"Nakamura 中村|nakamura", "王|wang", "Kim|kim", "Nguyễn|nguyen", "Østergaard|ostergaard",
		"Łęcki|lecki", "Ivanova Иванова|ivanova", "Papadopoulos|papadopoulos", "Okafor|okafor",
		"van der Berg|vanderberg", "de la Cruz|delacruz", "St. John|stjohn", `Smith "Jr."|smithjr`,
		"Lee & Sons|leesons", "<i>Italic</i>|italic", "Schäfer|schafer", "Patel|patel",
		"Gonçalves|goncalves", "Al-Farsi|alfarsi", "Ó Súilleabháin|osuilleabhain",
	)
}

// addFreeTexts fills the user-written texts: titles, roles, custom fields
// and voicemail greetings, with markup, quotes, newlines and emoji.
func (p *pools) addFreeTexts() {
	p.titles = texts(
		"Account Executive", "Senior Account Executive", "Sales Development Representative",
		"VP, Sales & Marketing", "Directeur général", "Vertriebsleiter", "销售经理",
		`Head of "Growth"`, "Account Executive <EMEA>", "Customer Success Manager",
		"Solutions Engineer 🚀", "Team Lead — Nord", "Chief Revenue Officer",
		"Sales Ops\nPart-time", "Chargée de clientèle", "Representante de ventas",
	)
	p.jobRoles = texts("SDR", "BDR", "AE", "Sales Manager", "CSM", "Sales Engineer", "RevOps", "Directeur commercial")
	p.customs = texts(
		"Gold tier", "West region", "Q3 → Q4 carry-over", "Ligne 1\nLigne 2", `He said "hi"`,
		"<script>alert(1)</script>", "Tom & Jerry", "00123", "true", "null", "客户经理", "Ünïcödé ✓",
		"tab\tseparated", "emoji 🎉🎉", "back\\slash", " leading and trailing ",
	)
	p.voicemails = texts(
		"Hi, you've reached me. Please leave a message.",
		"Bonjour, laissez-moi un message.\nMerci !",
		"Hallo! Ich bin gerade nicht erreichbar.\n\nBitte hinterlassen Sie eine Nachricht.",
		`Press "1" to reach my assistant & "2" for sales.`,
		"您好，请留言。",
		"Out of office 🌴 until Monday\r\nBack soon",
	)
}

// addVocabularies fills the lists of codes and names the API's enumerations
// and related resources draw from.
func (p *pools) addVocabularies() {
	p.timezones = texts(
		"America/New_York", "America/Chicago", "America/Denver", "America/Los_Angeles",
		"America/Sao_Paulo", "Europe/London", "Europe/Paris", "Europe/Berlin", "Europe/Kyiv",
		"Asia/Kolkata", "Asia/Kathmandu", "Asia/Shanghai", "Asia/Tokyo", "Australia/Sydney",
		"Pacific/Auckland", "Africa/Lagos", "UTC", "America/St_Johns",
	)
	p.tabs = texts("tasks", "prospects", "calls", "inbox", "sequences")
	p.tracking = texts("enabled", "disabled", "default")
	p.regions = texts("us-east-1", "us-west-2", "eu-west-1", "eu-central-1", "ap-southeast-2", "sa-east-1")
	p.countryCodes = texts("US", "GB", "DE", "FR", "JP", "CN", "BR", "IN", "CA", "AU", "NG", "ES")
	p.scimSources = texts("okta", "azure_ad", "onelogin", "jumpcloud")
	p.domains = texts("example.com", "acme.io", "société.example", "globex.co.uk", "initech.de", "umbrella.jp")
	p.duties = texts("SDR", "BDR", "Account Executive", "Customer Success Manager", "Sales Engineer",
		"Directeur commercial", "Team Lead 🚀", `"Closer"`)
	p.languages = texts("en", "en-US", "en-GB", "fr-FR", "de-DE", "ja-JP", "pt-BR", "zh-Hans")
	p.teamNames = texts("EMEA Sales", "Équipe Nord", "销售团队", "Team 🚀", "R&D <West>", "Inside Sales",
		"Enterprise", "Mid-Market", "SMB \"Hunters\"", "Customer Success", "Partnerships", "APAC")
	p.roleNames = texts("CEO", "Vice-President", "VP Sales, EMEA", "Directeur commercial", "Sales Manager",
		"Team Lead — Nord", "Account Executive", "SDR", "BDR", "Customer Success", "销售经理",
		"Solutions Engineer 🚀", "Ops <Admin> & Support")
	p.colors = texts("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f")
	p.inboundBehaviors = texts("inbound_bridge", "inbound_voicemail")
	p.inboundPhones = texts("bridge", "voip", "bridge_and_voip")
	p.voices = texts("man", "woman")
	p.promptTypes = texts("automated", "recorded", "off")
	p.phoneTypes = texts("bridge", "voip")
	p.providers = []string{"salesforce", "hubspot", "dynamics", "google", "microsoft", "zoom", "linkedin"}
	p.profileNames = []string{"Admin", "Default", "Sales Rep", "Manager", "Read-only", "Intégrateur", "Support « Tier 2 »"}
}

// addMaxLengthTexts fills the strings that are exactly as long as the schema
// allows, one per starting fragment.
func (p *pools) addMaxLengthTexts() {
	fragments := []string{"Lorem ipsum dolor sit amet ", "é à ü ß ", "李王张 ", "🚀✨ ", `"quoted" `, "<b>&amp;</b> ", "line\n"}
	for i := range fragments {
		p.maxCustoms = append(p.maxCustoms, newText(exactRunes(fragments[i:], p.maxCustomLen)))
		p.maxVoicemails = append(p.maxVoicemails, newText(exactRunes(fragments[i:], p.maxVoicemailLen)))
	}
}

// exactRunes repeats the fragments until the result holds exactly n runes
// (characters, as the API's limits count them).
func exactRunes(fragments []string, n int) string {
	var b strings.Builder
	count := 0
	for count < n {
		for _, f := range fragments {
			for _, r := range f {
				if count == n {
					return b.String()
				}
				b.WriteRune(r)
				count++
			}
		}
	}
	if utf8.RuneCountInString(b.String()) != n {
		panic("apisim: exactRunes miscounted") // programmer error
	}
	return b.String()
}
