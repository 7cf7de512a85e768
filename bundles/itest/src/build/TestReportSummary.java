import java.io.File;
import java.util.ArrayList;
import java.util.List;

import javax.xml.parsers.DocumentBuilderFactory;

import org.w3c.dom.Document;
import org.w3c.dom.Element;
import org.w3c.dom.NodeList;

/**
 * Prints the counts of the JUnit XML reports that bnd-testing wrote (it prints none itself) as the
 * surefire summary line, lists every failed test, and exits non-zero on a failure, an error or when
 * no test ran. Run by the itest module in the verify phase as a single-file source program:
 * {@code java TestReportSummary.java <reports dir>}.
 */
public final class TestReportSummary {
    public static void main(String[] args) throws Exception {
        File dir = new File(args[0]);
        List<File> reports = new ArrayList<>();
        collect(dir, reports);
        int tests = 0;
        int failures = 0;
        int errors = 0;
        int skipped = 0;
        List<String> broken = new ArrayList<>();
        DocumentBuilderFactory f = DocumentBuilderFactory.newInstance();
        for (File report : reports) {
            Document d = f.newDocumentBuilder().parse(report);
            NodeList cases = d.getElementsByTagName("testcase");
            for (int i = 0; i < cases.getLength(); i++) {
                Element c = (Element) cases.item(i);
                tests++;
                String name = c.getAttribute("classname") + "." + c.getAttribute("name");
                if (c.getElementsByTagName("failure").getLength() > 0) {
                    failures++;
                    broken.add("FAILURE " + name + ": " + message(c, "failure"));
                } else if (c.getElementsByTagName("error").getLength() > 0) {
                    errors++;
                    broken.add("ERROR   " + name + ": " + message(c, "error"));
                } else if (c.getElementsByTagName("skipped").getLength() > 0) {
                    skipped++;
                }
            }
        }
        System.out.println("[INFO] In-framework tests (bnd-testing, " + reports.size() + " report(s) in " + dir + "):");
        for (String b : broken) {
            System.out.println("[ERROR]   " + b);
        }
        String line = "Tests run: " + tests + ", Failures: " + failures + ", Errors: " + errors + ", Skipped: " + skipped;
        boolean ok = failures == 0 && errors == 0 && tests > 0;
        System.out.println((ok ? "[INFO] " : "[ERROR] ") + line);
        System.out.println((tests - failures - errors - skipped) + " passed, " + (failures + errors) + " failed, "
                + skipped + " skipped");
        if (!ok) {
            System.out.println("[ERROR] " + (tests == 0 ? "no in-framework test ran" : "in-framework tests failed"));
            System.exit(1);
        }
    }

    private static String message(Element c, String tag) {
        Element e = (Element) c.getElementsByTagName(tag).item(0);
        String m = e.getAttribute("message");
        return m.isEmpty() ? e.getTextContent().lines().findFirst().orElse("") : m;
    }

    private static void collect(File dir, List<File> out) {
        File[] files = dir.listFiles();
        if (files == null) {
            return;
        }
        for (File file : files) {
            if (file.isDirectory()) {
                collect(file, out);
            } else if (file.getName().startsWith("TEST-") && file.getName().endsWith(".xml")) {
                out.add(file);
            }
        }
    }
}
