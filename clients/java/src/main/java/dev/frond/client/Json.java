// SPDX-License-Identifier: Apache-2.0
package dev.frond.client;

import java.math.BigDecimal;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * A strict JSON reader for the server's answers (RFC 8259): objects as
 * LinkedHashMap, arrays as ArrayList, strings, numbers as Long when they
 * are integers that fit, else BigDecimal, true, false and null. Anything
 * else, nesting deeper than 32 or trailing text is a FrondException
 * BAD_RESPONSE; it never throws anything else.
 */
final class Json {
    private static final int MAX_DEPTH = 32;
    private final String s;
    private int i;

    private Json(String s) { this.s = s; }

    static Object parse(String text) {
        Json p = new Json(text);
        p.ws();
        Object v = p.value(0);
        p.ws();
        if (p.i != text.length())
            throw p.bad("text after the value");
        return v;
    }

    /** The object that text must be. */
    @SuppressWarnings("unchecked")
    static Map<String, Object> object(String text) {
        Object v = parse(text);
        if (!(v instanceof Map))
            throw new FrondException(FrondException.BAD_RESPONSE,
                "answer is not a JSON object");
        return (Map<String, Object>) v;
    }

    private FrondException bad(String what) {
        return new FrondException(FrondException.BAD_RESPONSE,
            "answer is not JSON: " + what + " at offset " + i);
    }

    private void ws() {
        while (i < s.length()) {
            char c = s.charAt(i);
            if (c != ' ' && c != '\t' && c != '\n' && c != '\r')
                break;
            i++;
        }
    }

    private Object value(int depth) {
        if (depth > MAX_DEPTH)
            throw bad("nesting too deep");
        if (i >= s.length())
            throw bad("end of text");
        char c = s.charAt(i);
        switch (c) {
        case '{': return object(depth);
        case '[': return array(depth);
        case '"': return string();
        case 't': return word("true", Boolean.TRUE);
        case 'f': return word("false", Boolean.FALSE);
        case 'n': return word("null", null);
        default:
            if (c == '-' || (c >= '0' && c <= '9'))
                return number();
            throw bad("unexpected '" + c + "'");
        }
    }

    private Object word(String w, Object v) {
        if (!s.startsWith(w, i))
            throw bad("not " + w);
        i += w.length();
        return v;
    }

    private Map<String, Object> object(int depth) {
        Map<String, Object> m = new LinkedHashMap<>();
        i++;
        ws();
        if (i < s.length() && s.charAt(i) == '}') {
            i++;
            return m;
        }
        for (;;) {
            ws();
            if (i >= s.length() || s.charAt(i) != '"')
                throw bad("a key expected");
            String k = string();
            ws();
            if (i >= s.length() || s.charAt(i) != ':')
                throw bad("':' expected");
            i++;
            ws();
            if (m.containsKey(k))
                throw bad("duplicate key \"" + k + "\"");
            m.put(k, value(depth + 1));
            ws();
            if (i >= s.length())
                throw bad("end of text in an object");
            char c = s.charAt(i++);
            if (c == '}')
                return m;
            if (c != ',')
                throw bad("',' or '}' expected");
        }
    }

    private List<Object> array(int depth) {
        List<Object> a = new ArrayList<>();
        i++;
        ws();
        if (i < s.length() && s.charAt(i) == ']') {
            i++;
            return a;
        }
        for (;;) {
            ws();
            a.add(value(depth + 1));
            ws();
            if (i >= s.length())
                throw bad("end of text in an array");
            char c = s.charAt(i++);
            if (c == ']')
                return a;
            if (c != ',')
                throw bad("',' or ']' expected");
        }
    }

    private String string() {
        StringBuilder b = new StringBuilder();
        i++;
        for (;;) {
            if (i >= s.length())
                throw bad("end of text in a string");
            char c = s.charAt(i++);
            if (c == '"')
                return b.toString();
            if (c < 0x20)
                throw bad("a control character in a string");
            if (c != '\\') {
                b.append(c);
                continue;
            }
            if (i >= s.length())
                throw bad("end of text in an escape");
            char e = s.charAt(i++);
            switch (e) {
            case '"': case '\\': case '/': b.append(e); break;
            case 'b': b.append('\b'); break;
            case 'f': b.append('\f'); break;
            case 'n': b.append('\n'); break;
            case 'r': b.append('\r'); break;
            case 't': b.append('\t'); break;
            case 'u':
                if (i + 4 > s.length())
                    throw bad("a short \\u escape");
                int u = 0;
                for (int k = 0; k < 4; k++) {
                    int d = Character.digit(s.charAt(i++), 16);
                    if (d < 0)
                        throw bad("a bad \\u escape");
                    u = u * 16 + d;
                }
                b.append((char) u);
                break;
            default:
                throw bad("a bad escape");
            }
        }
    }

    private Object number() {
        int start = i;
        if (s.charAt(i) == '-')
            i++;
        int digits = i;
        while (i < s.length() && s.charAt(i) >= '0' && s.charAt(i) <= '9')
            i++;
        if (i == digits || (s.charAt(digits) == '0' && i - digits > 1))
            throw bad("a bad number");
        boolean integer = true;
        if (i < s.length() && s.charAt(i) == '.') {
            integer = false;
            int f = ++i;
            while (i < s.length() && s.charAt(i) >= '0' && s.charAt(i) <= '9')
                i++;
            if (i == f)
                throw bad("a bad fraction");
        }
        if (i < s.length() && (s.charAt(i) == 'e' || s.charAt(i) == 'E')) {
            integer = false;
            i++;
            if (i < s.length() && (s.charAt(i) == '+' || s.charAt(i) == '-'))
                i++;
            int f = i;
            while (i < s.length() && s.charAt(i) >= '0' && s.charAt(i) <= '9')
                i++;
            if (i == f)
                throw bad("a bad exponent");
        }
        String t = s.substring(start, i);
        if (integer && t.length() <= 19) {
            try {
                return Long.parseLong(t);
            } catch (NumberFormatException ignored) {
                // too large for a long: a BigDecimal below
            }
        }
        if (t.length() > 400)
            throw bad("a number of " + t.length() + " characters");
        try {
            return new BigDecimal(t);
        } catch (NumberFormatException e) {
            throw bad("a number out of range");
        }
    }
}
